"""LASER (laser.txt §IV-B, §V-B, Algorithm 2): two PReLU networks and a deadline.

At each checkpoint (tau_est):
1. The task-time network (``hidden_layers`` PReLU layers, default 3: the depth the paper runs
   after Table I, where 5 layers were 1 % more accurate at 50 % more time per iteration; L1
   loss, Adam) estimates each running task's execution time from its checkpoint features and
   its elapsed time and its progress score phi_j (Table II; the proxy of SRQuant and LATE,
   ``progress_input``). It is trained on this job's finished tasks only
   (``_laser_model.task_training_set``: snapshots of tasks seen running at earlier
   checkpoints that have since finished, plus each finished task at fixed shares of its
   latency) and, with ``history_jobs`` > 0, on the finished tasks of the latest
   ``history_jobs`` jobs of the dataset that had finished by the checkpoint (the paper trains
   on earlier jobs; ``stragglers.replay.history.JobHistory`` never hands out a job still running).
   Times are in units of each job's median finished latency, so jobs of different lengths
   share one model. Fitted at the first prediction checkpoint and refitted every
   ``refit_every`` checkpoints. It never sees a running task's latency.
2. A running task whose estimate exceeds the deadline D is flagged. D is the job's straggler
   threshold tau, the same rule as SRQuant (``srquant.py``) so the two compare.
3. When something is flagged, the job-time / machine-time network (``job_hidden_layers``,
   default 1 as in Table I) estimates, for each r in 0..r_max, the job execution time T_r and
   machine time M_r from (r, job progress, median elapsed / D, share of running tasks
   flagged). Its examples are speculative-resume outcomes simulated on this job's own
   finished latencies at this and earlier checkpoints (``simulate_resume``): the paper
   trained it on testbed runs of speculative resume with each r, which a trace does not have.
   r = argmax U(r) = 1{T_r <= D} - theta C M_r (Algorithm 2; theta C scaled to the job as
   SRQuant's, ``theta_scaling``; tau_kill - tau_est the simulator's kill delay, ``kill_delay``
   null = ``JobInfo.kill_delay``); r + 1 goes with the flags
   (``resume_attempts``) to the simulator's speculative-resume policy.
"""

from __future__ import annotations

import numpy as np

from stragglers.formats.datasets import last_columns
from stragglers.formats.features import FeatureAccumulator, fill_missing
from stragglers.methods._laser_model import (
    choose_attempts,
    fit_regressor,
    predict_regressor,
    simulate_resume,
    task_training_set,
)
from stragglers.methods._online import validate_checkpoint
from stragglers.methods._progress import progress_column, progress_scores
from stragglers.methods._srquant_model import scaled_theta
from stragglers.methods.base import Checkpoint, JobInfo, Method, Param
from stragglers.methods.srquant import resolve_kill_delay

# examples of earlier jobs, per (converted dir, job, fractions): shared by the LASER instances
# of one process (one per job), bounded
_earlier_examples: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
_EARLIER_CACHE_SIZE = 256


def progress_input(
    feature_names,
    features: np.ndarray,
    elapsed: np.ndarray,
    finished_features: np.ndarray,
    finished_latency: np.ndarray,
) -> np.ndarray:
    """The task progress score phi_j of Table II for examples (features, elapsed in seconds):
    the proxy SRQuant and LATE use (``_progress``: work so far over the median finished task's
    total work, capped at 1), against the finished tasks given."""
    column = progress_column(feature_names)
    features = np.asarray(features, dtype=np.float64).reshape(len(elapsed), -1)
    finished_features = np.asarray(finished_features, dtype=np.float64).reshape(
        len(finished_latency), -1
    )
    if column is None:
        rate, finished_rate = np.ones(len(elapsed)), np.ones(len(finished_latency))
    else:
        index = list(feature_names).index(column)
        rate, finished_rate = features[:, index], finished_features[:, index]
    return progress_scores(
        np.nan_to_num(rate),
        np.asarray(elapsed, dtype=np.float64),
        np.nan_to_num(finished_rate),
        finished_latency,
    )[0]


def earlier_job_examples(
    job, last_columns: np.ndarray, elapsed_fractions: np.ndarray, with_progress: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """A finished earlier job's tasks as task-network examples: each task's final features at
    elapsed = f x its latency for f in `elapsed_fractions`, elapsed and target in units of the
    job's median latency. Tasks with no usage window are left out."""
    accumulator = FeatureAccumulator(job, last_columns)
    accumulator.advance(np.inf)
    tasks = np.flatnonzero(accumulator.n_windows > 0)
    if len(tasks) == 0:
        d = job.window_features.shape[1]
        return np.zeros((0, d + 1 + int(with_progress))), np.zeros(0)
    (features,) = fill_missing(accumulator.features(tasks))
    latency = job.latency[tasks]
    scale = float(np.median(latency))
    scale = scale if scale > 0 else 1.0
    empty = np.zeros(0)
    inputs, targets = task_training_set(
        features, latency / scale, elapsed_fractions, np.zeros((0, features.shape[1])), empty, empty
    )
    if with_progress:
        progress = progress_input(
            job.feature_names, inputs[:, :-1], inputs[:, -1] * scale, features, latency
        )
        inputs = np.column_stack([inputs, progress])
    return inputs, targets


class LASER(Method):
    name = "LASER"
    family = "Schedulers"
    # reads earlier finished jobs when history_jobs > 0 (its predict jobs get every shard)
    cross_job = True
    defaults = {
        "hidden_layers": Param(
            3, int, ge=1, doc="hidden layers of the task-time network"
        ),  # task-time network (paper: 3 after Table I; 1, 3, 5 tested)
        "job_hidden_layers": Param(
            1, int, ge=1, doc="hidden layers of the job-time / machine-time network"
        ),  # job-time / machine-time network (Table I's best)
        "width": Param(
            16, int, ge=1, doc="neurons per hidden layer"
        ),  # neurons per hidden layer (the paper does not say)
        "epochs": Param(
            100, int, ge=1, doc="full-batch Adam steps per fit"
        ),  # full-batch Adam steps per fit
        "learning_rate": Param(0.01, float, gt=0, doc="Adam's step size"),
        "refit_every": Param(
            5, int, ge=1, doc="checkpoints between task-network fits (1: every checkpoint)"
        ),  # checkpoints between task-network fits (1: every checkpoint)
        "min_finished": Param(
            5, int, ge=1, doc="finished tasks needed before anything is flagged"
        ),  # finished tasks needed before anything is flagged
        "max_train": Param(
            1000, int, ge=1, doc="examples per task-network fit (a seeded subsample beyond it)"
        ),  # examples per task-network fit (a seeded subsample beyond it)
        "elapsed_fractions": Param(
            [0.25, 0.5, 0.75],
            list,
            items=float,
            gt=0,
            le=1,
            doc="shares of a finished task's latency at which it becomes a training example",
        ),  # shares of a finished task's latency
        "r_max": Param(
            5, int, ge=0, doc="most extra attempts per straggler"
        ),  # most extra attempts per straggler
        "theta_cost": Param(
            1.0e-4, float, ge=0, doc="cost of one machine-second against PoCD (theta * C)"
        ),  # theta * C per machine-second (as SRQuant)
        # "job": theta_cost x reference_machine_time / M_0, M_0 network 2's machine time at
        # r = 0 (as SRQuant's, _srquant_model.scaled_theta); "literal": theta_cost as is
        "theta_scaling": Param(
            "job",
            str,
            choices=("job", "literal"),
            doc="scale theta_cost to the job's machine time ('job') or use it as given",
        ),
        "reference_machine_time": Param(
            1640.0,
            float,
            gt=0,
            doc="machine-seconds of the paper's jobs, the scale of theta_cost under 'job'",
        ),  # the paper's jobs' mean machine time (Table I), s
        # tau_kill - tau_est; null: the replay's = the simulator's resume policy's (as SRQuant)
        "kill_delay": Param(
            None,
            float,
            ge=0,
            nullable=True,
            doc="seconds from a flag to the kill of the slower attempts (null: the simulator's)",
        ),
        "progress_input": Param(
            True, bool, doc="whether the task network reads the progress proxy"
        ),  # the task network reads phi_j (Table II; False: not)
        "simulation_draws": Param(
            16,
            int,
            ge=1,
            doc="simulated outcomes per attempt count per checkpoint, for the job network",
        ),  # simulated outcomes per r per checkpoint for network 2
        "job_history": Param(
            4, int, ge=1, doc="checkpoints of simulated outcomes the job network is trained on"
        ),  # checkpoints of simulated outcomes network 2 is trained on
        "snapshots_per_checkpoint": Param(
            1000, int, ge=1, doc="running tasks remembered per checkpoint (a memory bound)"
        ),  # running tasks remembered per checkpoint (memory bound)
        "history_jobs": Param(
            0, int, ge=0, doc="latest finished earlier jobs trained on as well (0: this job only)"
        ),  # latest finished earlier jobs trained on (0: this job only)
    }

    def start_job(self, job: JobInfo) -> None:
        super().start_job(job)
        for key in (
            "hidden_layers",
            "job_hidden_layers",
            "refit_every",
            "epochs",
            "width",
            "min_finished",
            "max_train",
            "simulation_draws",
            "job_history",
            "snapshots_per_checkpoint",
        ):
            if int(self.params[key]) < 1:
                raise ValueError(f"method LASER: {key} must be >= 1, got {self.params[key]}")
        if int(self.params["history_jobs"]) < 0:
            raise ValueError(
                f"method LASER: history_jobs must be >= 0, got {self.params['history_jobs']}"
            )
        self.decisions: list[tuple[int, float]] = []  # (r, theta C used) per decision
        self.history_jobs_used = 0  # at the latest fit (logged by tests and the note)
        self.chosen_attempts: int | None = None
        self._task_model = None
        self._latency_scale = 1.0
        self._calls_since_fit = 0
        self._fits = 0
        self._snapshot_task: list[np.ndarray] = []
        self._snapshot_features: list[np.ndarray] = []
        self._snapshot_elapsed: list[np.ndarray] = []
        self._job_examples: list[tuple[np.ndarray, np.ndarray]] = []
        self._rng = np.random.default_rng(job.seed)
        self._snapshot_rng = np.random.default_rng([job.seed, 1])

    def resume_attempts(self) -> int | None:
        return self.chosen_attempts

    def _fit_seed(self) -> int:
        self._fits += 1
        return (self.job.seed * 1_000_003 + self._fits) % (2**31 - 1)

    def _fit_task_model(self, cp: Checkpoint) -> None:
        d = len(self.job.feature_names)
        if self._snapshot_task:
            task = np.concatenate(self._snapshot_task)
            features = np.vstack(self._snapshot_features)
            elapsed = np.concatenate(self._snapshot_elapsed)
        else:
            task, features, elapsed = np.zeros(0, int), np.zeros((0, d)), np.zeros(0)
        latency_of = np.full(self.job.n_tasks, np.nan)
        latency_of[cp.finished_tasks] = cp.finished_latency
        done = np.isfinite(latency_of[task])
        inputs, targets = task_training_set(
            cp.finished_features,
            cp.finished_latency,
            np.asarray(self.params["elapsed_fractions"], dtype=np.float64),
            features[done],
            elapsed[done],
            latency_of[task[done]],
        )
        limit = int(self.params["max_train"])
        if len(targets) > limit:
            keep = np.sort(self._rng.choice(len(targets), size=limit, replace=False))
            inputs, targets = inputs[keep], targets[keep]
        # L1 on times in units of the median finished latency: the same minimiser as L1 in
        # seconds, values near 1 for Adam's default scale, and comparable across jobs
        scale = float(np.median(cp.finished_latency))
        self._latency_scale = scale if scale > 0 else 1.0
        columns = [inputs[:, :-1], inputs[:, -1] / self._latency_scale]
        if self.params["progress_input"]:
            columns.append(
                progress_input(
                    self.job.feature_names,
                    inputs[:, :-1],
                    inputs[:, -1],
                    cp.finished_features,
                    cp.finished_latency,
                )
            )
        inputs = np.column_stack(columns)
        targets = targets / self._latency_scale
        self._finished = (cp.finished_features, cp.finished_latency)  # progress's reference
        if int(self.params["history_jobs"]) > 0:
            earlier_inputs, earlier_targets = self._earlier_examples(cp.time)
            if len(earlier_targets) > limit:
                keep = np.sort(self._rng.choice(len(earlier_targets), size=limit, replace=False))
                earlier_inputs, earlier_targets = earlier_inputs[keep], earlier_targets[keep]
            inputs = np.vstack([inputs, earlier_inputs])
            targets = np.concatenate([targets, earlier_targets])
        self._task_model = fit_regressor(
            inputs,
            targets,
            int(self.params["hidden_layers"]),
            int(self.params["width"]),
            int(self.params["epochs"]),
            float(self.params["learning_rate"]),
            self._fit_seed(),
        )
        self._calls_since_fit = 0

    def _earlier_examples(self, time: float) -> tuple[np.ndarray, np.ndarray]:
        """Examples from the latest `history_jobs` jobs that had finished by `time`."""
        history = self.job.history
        d = len(self.job.feature_names)
        if history is None:
            raise ValueError(
                "method LASER: history_jobs > 0 needs the dataset's job history "
                "(JobInfo.history), which this run did not provide"
            )
        fractions = np.asarray(self.params["elapsed_fractions"], dtype=np.float64)
        finished = history.finished_before(time).tail(int(self.params["history_jobs"]))
        with_progress = bool(self.params["progress_input"])
        inputs, targets = [np.zeros((0, d + 1 + int(with_progress)))], [np.zeros(0)]
        for job_id in finished["job_id"]:
            key = (str(history.converted_dir), str(job_id), tuple(fractions), with_progress)
            if key not in _earlier_examples:
                if len(_earlier_examples) >= _EARLIER_CACHE_SIZE:
                    _earlier_examples.pop(next(iter(_earlier_examples)))
                _earlier_examples[key] = earlier_job_examples(
                    history.load(job_id, time),
                    last_columns(history.kind, history.converted_dir),
                    fractions,
                    with_progress,
                )
            x, y = _earlier_examples[key]
            inputs.append(x)
            targets.append(y)
        self.history_jobs_used = len(finished)
        return np.vstack(inputs), np.concatenate(targets)

    def estimate_execution_time(self, features: np.ndarray, elapsed: np.ndarray) -> np.ndarray:
        """The task network's estimate in seconds, never below the elapsed time."""
        columns = [features, elapsed / self._latency_scale]
        if self.params["progress_input"]:
            columns.append(
                progress_input(self.job.feature_names, features, elapsed, *self._finished)
            )
        raw = predict_regressor(self._task_model, np.column_stack(columns))[:, 0]
        return np.maximum(raw * self._latency_scale, elapsed)

    def _choose_r(self, cp: Checkpoint, estimate: np.ndarray, flags: np.ndarray) -> None:
        deadline = float(self.job.straggler_threshold)
        r_max = int(self.params["r_max"])
        elapsed = cp.running_elapsed
        with np.errstate(divide="ignore", invalid="ignore"):
            share_done = np.where(estimate > 0, elapsed / estimate, 0.0)
        progress = float(np.mean(np.clip(share_done, 0.0, 1.0)))
        state = [progress, float(np.median(elapsed)) / deadline, float(flags.mean())]
        n_run = len(elapsed)
        inputs, targets = [], []
        for r in range(r_max + 1):
            job_time, machine_time = simulate_resume(
                r,
                elapsed,
                estimate,
                deadline,
                cp.finished_latency,
                resolve_kill_delay(self.name, self.params["kill_delay"], self.job),
                int(self.params["simulation_draws"]),
                self._rng,
            )
            inputs.append(np.tile([r, *state], (len(job_time), 1)))
            targets.append(
                np.column_stack([job_time / deadline, machine_time / (n_run * deadline)])
            )
        self._job_examples.append((np.vstack(inputs), np.vstack(targets)))
        self._job_examples = self._job_examples[-int(self.params["job_history"]) :]
        model = fit_regressor(
            np.vstack([x for x, _ in self._job_examples]),
            np.vstack([y for _, y in self._job_examples]),
            int(self.params["job_hidden_layers"]),
            int(self.params["width"]),
            int(self.params["epochs"]),
            float(self.params["learning_rate"]),
            self._fit_seed(),
        )
        query = np.array([[r, *state] for r in range(r_max + 1)], dtype=np.float64)
        predicted = predict_regressor(model, query)
        job_time = predicted[:, 0] * deadline
        machine_time = predicted[:, 1] * n_run * deadline
        theta = scaled_theta(
            float(self.params["theta_cost"]),
            str(self.params["theta_scaling"]),
            float(machine_time[0]),
            float(self.params["reference_machine_time"]),
        )
        r, _ = choose_attempts(job_time, machine_time, deadline, theta)
        self.decisions.append((r, theta))
        self.chosen_attempts = r + 1

    def predict(self, checkpoint: Checkpoint) -> np.ndarray:
        cp = checkpoint
        validate_checkpoint(self.job, cp)
        n_run = len(cp.running_tasks)
        if n_run == 0:
            return np.zeros(0, dtype=bool)
        # what the method sees of running tasks now: labelled later if they finish (at most
        # snapshots_per_checkpoint of them, a seeded choice, so memory stays bounded)
        seen = np.arange(n_run)
        limit = int(self.params["snapshots_per_checkpoint"])
        if n_run > limit:
            seen = np.sort(self._snapshot_rng.choice(n_run, size=limit, replace=False))
        self._snapshot_task.append(np.asarray(cp.running_tasks, dtype=np.int64)[seen])
        self._snapshot_features.append(np.asarray(cp.running_features, dtype=np.float64)[seen])
        self._snapshot_elapsed.append(np.asarray(cp.running_elapsed, dtype=np.float64)[seen])
        if len(cp.finished_tasks) < int(self.params["min_finished"]):
            return np.zeros(n_run, dtype=bool)
        self._calls_since_fit += 1
        if self._task_model is None or self._calls_since_fit >= int(self.params["refit_every"]):
            self._fit_task_model(cp)
        self._finished = (cp.finished_features, cp.finished_latency)  # progress's reference
        estimate = self.estimate_execution_time(cp.running_features, cp.running_elapsed)
        flags = estimate > float(self.job.straggler_threshold)
        if flags.any():
            self._choose_r(cp, estimate, flags)
        return flags
