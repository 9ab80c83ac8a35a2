"""Deliberately broken online methods: each breaks one part of the method contract, and
tests/test_method_contract.py shows that the matching check of tests/method_checks.py fails
on it. Not in any registry (they are imported by path, never through `method_dirs`)."""

import numpy as np

from stragglers.methods.base import Method, Param


class _Elapsed(Method):
    """Flags running tasks that ran longer than the threshold (correct; the base of the rest)."""

    family = "Test"
    defaults = {"factor": Param(1.0, float, gt=0, doc="multiple of tau a running task must pass")}

    def predict(self, checkpoint):
        tau = self.job.straggler_threshold * self.params["factor"]
        return np.asarray(checkpoint.running_elapsed, dtype=float) >= tau


class Correct(_Elapsed):
    name = "Correct"


class TooManyFlags(_Elapsed):
    name = "TooManyFlags"

    def predict(self, checkpoint):  # one flag per task of the job, not per running task
        return np.zeros(self.job.n_tasks, dtype=bool)


class FloatFlags(_Elapsed):
    name = "FloatFlags"

    def predict(self, checkpoint):
        return super().predict(checkpoint).astype(float)


class PeeksAtLatency(_Elapsed):
    """Uses the true latencies when they are there, though it is not privileged."""

    name = "PeeksAtLatency"

    def predict(self, checkpoint):
        if self.job.true_latency is not None:
            latency = np.asarray(self.job.true_latency)[checkpoint.running_tasks]
            return latency >= self.job.straggler_threshold
        return super().predict(checkpoint)


class WritesIntoCheckpoint(_Elapsed):
    name = "WritesIntoCheckpoint"

    def predict(self, checkpoint):
        checkpoint.running_features[:] = 0.0  # scales the replay's arrays in place
        return super().predict(checkpoint)


class Unseeded(_Elapsed):
    name = "Unseeded"

    def predict(self, checkpoint):
        return np.random.default_rng().random(len(checkpoint.running_tasks)) < 0.5


class CrashesOnOneFinished(_Elapsed):
    name = "CrashesOnOneFinished"

    def predict(self, checkpoint):
        second = checkpoint.finished_latency[1]  # IndexError with one finished task
        return np.asarray(checkpoint.running_elapsed) >= second


class VagueError(_Elapsed):
    name = "VagueError"

    def predict(self, checkpoint):
        if len(checkpoint.running_tasks) == 0:
            raise ValueError("bad input")
        return super().predict(checkpoint)


class BareDefaults(_Elapsed):
    name = "BareDefaults"
    # a new parameter as a bare value (over an inherited Param, a bare value is its new default)
    defaults = {"margin": 1.0}


class DefaultOutOfRange(_Elapsed):
    name = "DefaultOutOfRange"
    defaults = {"factor": Param(-1.0, float, gt=0)}


class UndocumentedParam(_Elapsed):
    name = "UndocumentedParam"
    defaults = {"factor": Param(1.0, float, gt=0)}
