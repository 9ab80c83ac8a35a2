"""The replay's settings and the rules every timeline shares: checkpoints, the straggler
threshold, seeds, the pruned scored set, and what a run of one method on one job returns.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

# dataset_replay: the one merge of the global and a dataset's replay settings, re-exported
# for the callers that import it with the replay's settings
from stragglers.formats.dataset_spec import dataset_replay as dataset_replay
from stragglers.formats.jobs import Job
from stragglers.formats.protocols import ProtocolRules, resolve_rules


@dataclass(frozen=True)
class ReplaySettings:
    checkpoint_interval: float = 300.0
    grid_origin: float = 600.0
    start_fraction: float = 0.04
    straggler_quantile: float = 0.90
    protocol: str = "causal"
    overrides: dict[str, Any] | None = None  # rules flipped from the protocol's preset
    # speculative resume's tau_kill - tau_est (simulation.policies.kill_delay): None = one
    # checkpoint interval, as the simulator's resume policy (stragglers.simulate.policies)
    kill_delay: float | None = None
    # the aligned timeline's step (`protocol: paper`): longer windows are cut into pieces of
    # it, checkpoint k is read at (k + 1) x it; None = checkpoint_interval (docs/protocols.md)
    aligned_window: float | None = None

    def __post_init__(self) -> None:
        resolve_rules(self.protocol, self.overrides)  # raises naming the setting
        if not 0.5 <= self.straggler_quantile < 1.0:
            raise ValueError(
                f"replay.straggler_quantile must be in [0.5, 1), got {self.straggler_quantile}"
            )
        if not 0.0 < self.start_fraction < 1.0:
            raise ValueError(f"replay.start_fraction must be in (0, 1), got {self.start_fraction}")
        if self.checkpoint_interval <= 0:
            raise ValueError("replay.checkpoint_interval must be positive")
        if self.aligned_window is not None and not self.aligned_window > 0:
            raise ValueError(f"replay.aligned_window must be positive, got {self.aligned_window}")
        if self.kill_delay is not None and not (0 <= float(self.kill_delay) < math.inf):
            raise ValueError(f"simulation.policies.kill_delay must be >= 0, got {self.kill_delay}")

    @property
    def resume_kill_delay(self) -> float:
        """tau_kill - tau_est of speculative resume: the one number SRQuant / LASER model and
        the simulator's resume policy applies (`kill_delay`, or one checkpoint interval)."""
        return float(self.checkpoint_interval if self.kill_delay is None else self.kill_delay)

    @property
    def aligned_step(self) -> float:
        """The aligned timeline's step: `aligned_window`, or the checkpoint interval."""
        return float(
            self.checkpoint_interval if self.aligned_window is None else self.aligned_window
        )

    @property
    def rules(self) -> ProtocolRules:
        return resolve_rules(self.protocol, self.overrides)


def straggler_threshold(latency: np.ndarray, quantile: float, protocol: str = "causal") -> float:
    """The job's latency quantile (p90 by default); tasks at or above it are stragglers."""
    latency = np.asarray(latency, dtype=float)
    if protocol in ("reference", "sorted_index"):
        # the reference code indexes the sorted latencies at int(q * n)
        return float(np.sort(latency)[int(quantile * len(latency))])
    return float(np.quantile(latency, quantile))


def checkpoint_times(
    task_start: np.ndarray, task_end: np.ndarray, settings: ReplaySettings
) -> np.ndarray:
    """Grid times after the first task starts, up to the first grid time at or after the last end."""
    step, origin = settings.checkpoint_interval, settings.grid_origin
    first = math.floor((float(np.min(task_start)) - origin) / step) + 1
    last = math.ceil((float(np.max(task_end)) - origin) / step)
    return origin + step * np.arange(first, max(first, last) + 1, dtype=float)


def derive_seed(seed: int, *names: str) -> int:
    """A stable 32-bit seed from the config seed and names (method, job): no Python hash()."""
    digest = hashlib.sha256("\x1f".join([str(seed), *names]).encode()).digest()
    return int.from_bytes(digest[:4], "little")


def reference_dropped_tasks(job: Job, threshold: float, start_fraction: float) -> np.ndarray:
    """Tasks the reference code removes by their final length (window count): a leak."""
    n_windows = np.bincount(job.window_task, minlength=job.n_tasks)
    return pruned_tasks(job.latency, n_windows, threshold, start_fraction)


def pruned_tasks(
    latency: np.ndarray, n_windows: np.ndarray, threshold: float, start_fraction: float
) -> np.ndarray:
    """Rule 5 (pruning of the scored set): stragglers with fewer windows than their mean - 1
    and non-stragglers between the int(start_fraction * n) cut and tau with more windows than
    their mean + 1."""
    latency = np.asarray(latency, dtype=float)
    stragglers = latency >= threshold
    training_cut = np.sort(latency)[int(start_fraction * len(latency))]
    gap = (~stragglers) & (latency >= training_cut)
    dropped = np.zeros(len(latency), dtype=bool)
    if stragglers.any():
        dropped |= stragglers & (n_windows < n_windows[stragglers].mean() - 1)
    if gap.any():
        dropped |= gap & (n_windows > n_windows[gap].mean() + 1)
    return dropped


@dataclass
class JobRun:
    """What one method did on one job."""

    flag_time: np.ndarray  # NaN where never flagged
    evaluated: np.ndarray  # bool
    threshold: float
    n_checkpoints: int  # checkpoints at which the method was asked to predict
    prediction_start: float  # NaN if prediction never started
    # the task timeline the run used when it is not the trace's (aligned timeline)
    latency: np.ndarray | None = None
    task_start: np.ndarray | None = None
    task_end: np.ndarray | None = None
    # r + 1 the method chose for each flagged task's speculative resume; NaN = policy default
    resume_attempts: np.ndarray | None = None
