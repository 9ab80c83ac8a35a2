"""A cross-job method that records what the replay handed it (tests/test_replay_service.py):
every path that replays must give a cross-job method the dataset's JobHistory."""

from typing import ClassVar

import numpy as np

from stragglers.methods.base import Method, Param


class HistorySeen(Method):
    name = "HistorySeen"
    family = "Test"
    cross_job = True
    uses_machine_state = True
    defaults: ClassVar = {"flag": Param(True, bool, doc="flag every running task")}
    # (job id, the history's class name or None, the machine state columns it was given)
    seen: ClassVar[list] = []

    def start_job(self, job):
        super().start_job(job)
        history = None if job.history is None else type(job.history).__name__
        type(self).seen.append((job.job_id, history, tuple(job.machine_state_names)))

    def predict(self, checkpoint):
        return np.full(len(checkpoint.running_tasks), bool(self.params["flag"]))
