"""Elapsed: flag a running task once its elapsed time reaches the straggler threshold tau.

A floor, not a contender: a task still running at elapsed time tau will have latency > tau,
so every flag is a true straggler, but it is raised exactly when the label can be read off the
clock, too late to help. It shows how much of a method's F1 can come from the clock alone
(see the early-flag metrics of `stragglers.evaluate.timing`). Uses no feature and no model.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from stragglers.methods.base import Checkpoint, Method

SCHEDULERS_FAMILY = "Schedulers"


class Elapsed(Method):
    name: ClassVar[str] = "Elapsed"
    family: ClassVar[str] = SCHEDULERS_FAMILY
    defaults: ClassVar[dict[str, Any]] = {}

    def predict(self, checkpoint: Checkpoint) -> np.ndarray:
        tau = float(self.job.straggler_threshold)
        return np.asarray(checkpoint.running_elapsed, dtype=np.float64) >= tau
