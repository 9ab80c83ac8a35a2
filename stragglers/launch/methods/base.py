"""The interface of a launch-time model (one file per model in this folder, found by
`stragglers.launch.methods.registry`).

The protocol (`stragglers.launch.crossjob`) hands a model only rows of tasks whose jobs had
finished before the prediction time, already standardised and with stragglers oversampled:

    model = ModelClass(params, seed)
    model.feature_names = [...]                    # the d launch columns, in X's order
    model.fit(X, straggler, node, workload)       # X: (n, d) launch features; the rest (n,)
    predicted = model.predict(X, node, workload)   # bool per task about to be placed
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import numpy as np

from stragglers.methods.base import merged_params


class LaunchMethod(abc.ABC):
    name: ClassVar[str]
    family: ClassVar[str] = "Launch-time"
    defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self, params: dict[str, Any] | None = None, seed: int = 0):
        self.params = merged_params(f"launch method {self.name}", self.defaults, params)
        self.seed = int(seed)
        self.feature_names: list[str] = []  # set by the protocol before fit

    @abc.abstractmethod
    def fit(
        self, X: np.ndarray, straggler: np.ndarray, node: np.ndarray, workload: np.ndarray
    ) -> None:
        """Learn from finished tasks (`straggler`: bool labels)."""

    @abc.abstractmethod
    def predict(self, X: np.ndarray, node: np.ndarray, workload: np.ndarray) -> np.ndarray:
        """One bool per task: predicted to straggle if placed now."""

    def describe(self) -> dict[str, float]:
        """What the fitted model learnt that a table should show (columns of the learning
        curve); nothing by default."""
        return {}
