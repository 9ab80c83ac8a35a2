"""The interface every straggler predictor implements.

The replay (`stragglers.replay`) drives a method through one job at a time:

    method = MethodClass(params, seed)
    method.start_job(job_info)
    for checkpoint in checkpoints:           # once prediction has started
        flags = method.predict(checkpoint)   # one bool per running task in the checkpoint

A method sees, at each checkpoint, the finished tasks (features and latency) and the running
tasks that have not been flagged yet (features from windows that ended by then, elapsed
time); never a running task's latency. Methods that are allowed more (the Oracle, Wrangler's
labelled training split) say so with `privileged = True` and receive the true latencies in
`JobInfo.true_latency`; their results are marked as privileged in every table.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np


@dataclass(frozen=True)
class JobInfo:
    job_id: str
    n_tasks: int
    feature_names: tuple[str, ...]
    straggler_threshold: float  # tau: latency at or above which a task is a straggler
    seed: int  # per (method, job) seed derived from the config's seed
    true_latency: np.ndarray | None = None  # only for privileged methods
    # cross-job methods only (Method.cross_job): the dataset's jobs, handed out once finished
    # (stragglers.history.JobHistory), and this job's start on the trace's clock
    history: Any = None
    job_start: float = float("nan")
    # methods with uses_machine_state: the columns of the Checkpoint's machine state arrays
    machine_state_names: tuple[str, ...] = ()
    # the replay protocol's `regressor` rule (stragglers/protocol.py): the latency regressor
    # of NURD, NURD-NC and GBTR when their own `regressor` parameter is "protocol"
    regressor: str = "xgboost"


@dataclass(frozen=True)
class Checkpoint:
    time: float  # seconds on the trace's clock
    index: int  # position of the checkpoint on the job's grid (0 = job start)
    first_prediction: bool  # True at the first checkpoint where prediction runs
    finished_tasks: np.ndarray  # int positions, (n_fin,)
    finished_features: np.ndarray  # (n_fin, d)
    finished_latency: np.ndarray  # (n_fin,)
    running_tasks: np.ndarray  # int positions of running, not yet flagged tasks, (n_run,)
    running_features: np.ndarray  # (n_run, d)
    running_elapsed: np.ndarray  # seconds since each running task started, (n_run,)
    # True when the protocol already min-max scaled features and latencies with all tasks'
    # final values (replay rule `scaling: final`); methods then use them as given
    prescaled: bool = False
    # methods with uses_machine_state only (None otherwise, and for kinds without it): the
    # state of each task's machine at its latest window available now (`*_machine_state`)
    # and just before the task started (`*_launch_state`); see stragglers.machines
    finished_machine_state: np.ndarray | None = None  # (n_fin, m)
    running_machine_state: np.ndarray | None = None  # (n_run, m)
    finished_launch_state: np.ndarray | None = None
    running_launch_state: np.ndarray | None = None


def merged_params(what: str, defaults: dict[str, Any], params: dict[str, Any] | None) -> dict[str, Any]:
    """`params` over `defaults`; an unknown parameter is an error naming `what`."""
    params = dict(params or {})
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ValueError(f"{what}: unknown parameter(s) {unknown}; known: {sorted(defaults)}")
    return {**defaults, **params}


class Method(abc.ABC):
    """A straggler predictor. Subclasses set `name` and `family` and are found by the registry."""

    name: ClassVar[str]
    family: ClassVar[str]  # table grouping, e.g. "Ours", "Supervised", "Outlier detection"
    privileged: ClassVar[bool] = False  # sees true latencies (Oracle, Wrangler)
    defaults: ClassVar[dict[str, Any]] = {}
    # learns from earlier jobs: the replay fills JobInfo.history / job_start, and the predict
    # rule gives it every shard of the dataset (read from source: methods.declared_cross_job)
    cross_job: ClassVar[bool] = False
    # reads the machine's state: the replay fills Checkpoint.*_machine_state / *_launch_state
    uses_machine_state: ClassVar[bool] = False

    def __init__(self, params: dict[str, Any] | None = None, seed: int = 0):
        self.params = merged_params(f"method {self.name}", self.defaults, params)
        self.seed = int(seed)

    def start_job(self, job: JobInfo) -> None:  # noqa: B027 - optional hook
        """Reset per-job state. Called before the first checkpoint of every job."""
        self.job = job

    @abc.abstractmethod
    def predict(self, checkpoint: Checkpoint) -> np.ndarray:
        """Return a bool array, True for each running task predicted to straggle."""

    def resume_attempts(self) -> int | None:
        """r + 1 attempts the speculative-resume policy should launch for the tasks flagged at
        the last checkpoint (SRQuant, LASER choose r per job); None: the configured default."""
        return None

    def excluded_from_evaluation(self) -> np.ndarray | None:
        """Task positions this method used with their labels (not scored), or None."""
        return None
