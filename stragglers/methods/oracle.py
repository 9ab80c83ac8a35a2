"""Oracle: knows every true latency and flags each straggler at the first checkpoint where it
is running and visible to the predictor. The upper bracket of every table (privileged)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from stragglers.methods.base import Checkpoint, Method


class Oracle(Method):
    name: ClassVar[str] = "Oracle"
    family: ClassVar[str] = "Reference"
    privileged: ClassVar[bool] = True

    def predict(self, checkpoint: Checkpoint) -> np.ndarray:
        latency = self.job.true_latency[checkpoint.running_tasks]
        return latency >= self.job.straggler_threshold
