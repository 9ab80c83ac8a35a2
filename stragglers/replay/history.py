"""Cross-job history for online methods that learn from earlier jobs (START, ...).

A cross-job method (`Method.cross_job = True`) receives a `JobHistory` in `JobInfo.history`.
It may only ask for jobs that had finished by a time it knows (a checkpoint's time, or the
job's own start): `finished_before(time)` returns the manifest rows with `job_end <= time`,
and `load(job_id, time)` refuses a job that had not finished by `time`, so a model never trains
on a job still running (or not yet started) at the moment it predicts.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pandas as pd

from stragglers.formats.datasets import feature_columns, known_kinds, machine_state_columns
from stragglers.formats.jobs import Job, read_job
from stragglers.replay.core import ReplaySettings
from stragglers.replay.wallclock import iterate_checkpoints


class JobHistory:
    """The dataset's converted jobs, handed out only once they had finished."""

    def __init__(
        self,
        manifest: pd.DataFrame,
        converted_dir: Path | str,
        kind: str,
        cache_size: int = 32,
        seed: int = 0,
        machine_state: bool = False,
    ):
        missing = [c for c in ("job_id", "path", "job_start", "job_end") if c not in manifest]
        if missing:
            raise ValueError(f"JobHistory: manifest lacks columns {missing}")
        if kind not in known_kinds():
            raise ValueError(f"JobHistory: unknown dataset kind {kind!r}")
        frame = manifest.copy()
        frame["job_id"] = frame["job_id"].astype(str)
        # ties on job_end broken by job id, so the order never depends on the manifest's
        self.manifest = frame.sort_values(["job_end", "job_id"], kind="stable").reset_index(
            drop=True
        )
        self._job_end = dict(zip(self.manifest["job_id"], self.manifest["job_end"]))
        self._path = dict(zip(self.manifest["job_id"], self.manifest["path"]))
        self.converted_dir = Path(converted_dir)
        self.kind = kind
        self.feature_names = feature_columns(kind, converted_dir)
        # jobs are read with the machine's state for methods that use it
        self.machine_state = machine_state_columns(kind) if machine_state else []
        self.cache_size = int(cache_size)
        # the config's seed: models trained on earlier jobs seed from it and their ids, so a
        # model does not depend on which shard (or job) trained it first
        self.seed = int(seed)
        self._cache: OrderedDict[str, Job] = OrderedDict()
        self.loads = 0  # files read (cache misses), for tests and logs

    def finished_before(self, time: float) -> pd.DataFrame:
        """Manifest rows of the jobs with job_end <= time, sorted by job_end (then job id)."""
        end = self.manifest["job_end"].to_numpy(float)
        stop = int(np.searchsorted(end, float(time), side="right"))
        return self.manifest.iloc[:stop]

    def job_end(self, job_id: str) -> float:
        if str(job_id) not in self._job_end:
            raise KeyError(f"JobHistory: job {job_id!r} is not in the manifest")
        return float(self._job_end[str(job_id)])

    def load(self, job_id: str, time: float | None = None) -> Job:
        """The converted job (bounded LRU cache). With `time` (the caller's prediction time,
        as START passes it), a job that had not finished by then raises ValueError."""
        job_id = str(job_id)
        end = self.job_end(job_id)
        if time is not None and not end <= float(time):
            raise ValueError(
                f"JobHistory: job {job_id} ends at {end}, after the prediction time {time}: "
                "a model may not see it"
            )
        if job_id in self._cache:
            self._cache.move_to_end(job_id)
            return self._cache[job_id]
        job = read_job(
            self.converted_dir / self._path[job_id], job_id, self.feature_names, self.machine_state
        )
        self.loads += 1
        self._cache[job_id] = job
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return job

    def checkpoints(
        self,
        job: Job,
        last_columns: np.ndarray,
        start_fraction: float,
        checkpoint_interval: float,
        grid_origin: float,
        machine_state: bool = False,
    ):
        """The replay's checkpoints of a finished earlier `job` on the given grid, nothing
        flagged: what a cross-job method trains on is what it predicts on (START). Handed to
        methods with the history, so a method never imports the replay."""
        if not (
            checkpoint_interval > 0
            and math.isfinite(checkpoint_interval)
            and math.isfinite(grid_origin)
        ):
            raise ValueError(
                "training on the replay's checkpoint grid needs the job's "
                "checkpoint_interval / grid_origin (JobInfo), which are missing"
            )
        settings = ReplaySettings(
            checkpoint_interval=float(checkpoint_interval),
            grid_origin=float(grid_origin),
            start_fraction=start_fraction,
        )
        none = np.zeros(job.n_tasks, dtype=bool)
        return iterate_checkpoints(
            job, settings, last_columns, none, none, machine_state=machine_state
        )
