"""Tobit (Tobin, 1958): linear regression of latency with right-censored Gaussian noise.

Fit by maximum likelihood (L-BFGS with the analytic gradient of `_censored.tobit_negloglik`)
on finished tasks (observed latencies) and running tasks (censored at their elapsed time, or
at the largest finished latency with censoring="max_finished", as in the paper's code).
A small ridge penalty `l2` on the slopes keeps the fit defined when features are collinear.
With no more finished (uncensored) tasks than coefficients, a linear model interpolates them
and the likelihood grows without bound as sigma -> 0: Tobit then makes no prediction (flags
nothing) until more than (number of features + 1) tasks have finished.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from stragglers.methods._censored import (
    CENSORING_MODES,
    GAUSSIAN_DECISIONS,
    TARGETS,
    CensoredGaussianMethod,
    fit_tobit,
)
from stragglers.methods.base import Param


@dataclass(frozen=True)
class LinearModel:
    intercept: float
    coef: np.ndarray

    def predict(self, Z: np.ndarray) -> np.ndarray:
        return self.intercept + np.asarray(Z) @ self.coef


class Tobit(CensoredGaussianMethod):
    name: ClassVar[str] = "Tobit"
    defaults: ClassVar[dict[str, Any]] = {
        "censoring": Param(
            "elapsed",
            str,
            choices=CENSORING_MODES,
            doc="a running task's censoring point: its elapsed time, or the longest finished latency",
        ),  # or "max_finished" (the paper's code)
        "target": Param(
            "latency",
            str,
            choices=TARGETS,
            doc="the regression target: latency / tau, or its logarithm",
        ),  # Gaussian on latency / tau; or "log_latency"
        "decision": Param(
            "latent_mean",
            str,
            choices=GAUSSIAN_DECISIONS,
            doc="flag on the latent mean, or on the median conditional on the elapsed time",
        ),  # or "conditional_median"
        "l2": Param(1e-3, float, ge=0, doc="ridge penalty of the Tobit fit"),
        "refit_growth": 0.1,
    }

    def identifiable(self, n_finished: int, n_columns: int) -> bool:
        return n_finished > n_columns + 1

    def fit_model(self, Z, y, censored, seed):
        X = np.hstack([np.ones((len(Z), 1)), Z])
        beta, sigma = fit_tobit(X, y, censored, l2=float(self.params["l2"]))
        return LinearModel(intercept=float(beta[0]), coef=beta[1:]), sigma
