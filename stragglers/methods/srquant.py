"""SRQuant (laser.txt §IV-A, Algorithm 1): Hadoop's linear estimate against a deadline.

At each checkpoint (tau_est), every running task's execution time is estimated the way Hadoop
does, from its progress score (``stragglers.methods._progress``, the same proxy as LATE):

    estimate = startup_offset + (elapsed - startup_offset) / progress

(``startup_offset``: seconds of a task's start-up that do not scale with progress; 0 by
default, as the traces give no start-up phase). A task whose estimate exceeds the deadline D
is flagged. D is the job's straggler threshold tau (the replay's task deadline: a task that runs
past it is a straggler). A task with progress 0 has no estimate and is not flagged.

The number of speculative attempts is chosen per job by Algorithm 1 (``_srquant_model``):
Pareto(t_min, beta) fitted by maximum likelihood to the finished latencies, tau_est = the median
elapsed time and phi_est = the mean progress of the running tasks, r = argmax over 0..r_max of
U(r) = log(R(r) - R_min) - theta_C * E_r(T), R_min = 0.1 as in the paper's experiments, theta_C
the paper's 1e-4 per machine-second scaled to the job (``theta_scaling``, ``scaled_theta``:
1e-4 x 1640 / E_0(T); "literal" keeps 1e-4), tau_kill - tau_est the simulator's kill delay
(``kill_delay`` null: ``JobInfo.kill_delay``, one checkpoint interval by default). The chosen
r + 1 (``chosen_attempts``) is written with each flag (``resume_attempts`` column of the predictions) and used by the simulator's
speculative-resume policy for this method's flags.
"""

from __future__ import annotations

import numpy as np

from stragglers.methods._online import validate_checkpoint
from stragglers.methods._progress import estimate_progress
from stragglers.methods._srquant_model import (
    choose_attempts,
    expected_machine_time,
    fit_pareto,
    scaled_theta,
)
from stragglers.methods.base import Checkpoint, JobInfo, Method, Param


def resolve_kill_delay(method: str, kill_delay, job: JobInfo) -> float:
    """A method's tau_kill - tau_est: its `kill_delay` parameter when set, else the job's
    (`JobInfo.kill_delay`, the simulator's resume policy's for this dataset)."""
    value = job.kill_delay if kill_delay is None else float(kill_delay)
    if not (value >= 0 and np.isfinite(value)):
        raise ValueError(
            f"method {method}: kill_delay is null and the replay gave no kill "
            f"delay (JobInfo.kill_delay = {job.kill_delay}); set kill_delay"
        )
    return float(value)


def hadoop_estimate(elapsed: np.ndarray, progress: np.ndarray, startup_offset: float) -> np.ndarray:
    """Estimated execution time; inf where progress is 0 (no estimate)."""
    elapsed = np.asarray(elapsed, dtype=np.float64)
    progress = np.asarray(progress, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        work_time = np.maximum(elapsed - startup_offset, 0.0) / progress
    return np.where(progress > 0, startup_offset + work_time, np.inf)


class SRQuant(Method):
    name = "SRQuant"
    family = "Schedulers"
    defaults = {
        "r_max": Param(
            5, int, ge=0, doc="most extra attempts per straggler"
        ),  # most extra attempts per straggler
        "pocd_min": Param(
            0.1,
            float,
            ge=0,
            le=1,
            doc="R_min: the smallest probability of completion before the deadline to aim for",
        ),  # R_min of Eq. 9 (the paper's experiments, laser.txt §V)
        "theta_cost": Param(
            1e-4, float, ge=0, doc="cost of one machine-second against PoCD (theta * C)"
        ),  # theta * C per machine-second (the paper's experiments)
        # "job": theta_cost x reference_machine_time / E_0(T), the paper's trade-off scaled to
        # this job's machine time (_srquant_model.scaled_theta); "literal": theta_cost as is
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
        # tau_kill - tau_est; null: the replay's (JobInfo.kill_delay), which is the simulator's
        # resume policy's (simulation.policies.kill_delay, default one checkpoint interval)
        "kill_delay": Param(
            None,
            float,
            ge=0,
            nullable=True,
            doc="seconds from a flag to the kill of the slower attempts (null: the simulator's)",
        ),
        "startup_offset": Param(
            0.0, float, ge=0, doc="seconds of a task's start-up that do not scale with progress"
        ),
    }

    def start_job(self, job: JobInfo) -> None:
        super().start_job(job)
        self.chosen_attempts: int | None = None
        self.decisions: list[tuple[int, float]] = []  # (r, theta C used) per decision

    def kill_delay(self) -> float:
        """tau_kill - tau_est: the parameter, or (null) the replay's, which the simulator's
        resume policy uses too."""
        return resolve_kill_delay(self.name, self.params["kill_delay"], self.job)

    def resume_attempts(self) -> int | None:
        return self.chosen_attempts

    def predict(self, checkpoint: Checkpoint) -> np.ndarray:
        validate_checkpoint(self.job, checkpoint)
        n_run = len(checkpoint.running_tasks)
        if n_run == 0 or len(checkpoint.finished_tasks) == 0:
            return np.zeros(n_run, dtype=bool)
        progress = estimate_progress(checkpoint, self.job.feature_names).progress
        estimate = hadoop_estimate(
            checkpoint.running_elapsed, progress, float(self.params["startup_offset"])
        )
        deadline = float(self.job.straggler_threshold)
        flags = np.isfinite(estimate) & (estimate > deadline)
        if flags.any():
            try:
                t_min, beta = fit_pareto(checkpoint.finished_latency)
            except ValueError:
                return flags  # the model cannot be fitted yet: flag, keep the last r
            tau_est = float(np.median(checkpoint.running_elapsed))
            phi_est = float(np.clip(progress.mean(), 0.0, 1.0 - 1e-9))
            kill_delay = self.kill_delay()
            theta = scaled_theta(
                float(self.params["theta_cost"]),
                str(self.params["theta_scaling"]),
                expected_machine_time(
                    0, self.job.n_tasks, t_min, beta, deadline, tau_est, phi_est, kill_delay
                ),
                float(self.params["reference_machine_time"]),
            )
            r, _ = choose_attempts(
                self.job.n_tasks,
                t_min,
                beta,
                deadline,
                tau_est=tau_est,
                phi_est=phi_est,
                kill_delay=kill_delay,
                r_max=int(self.params["r_max"]),
                pocd_min=float(self.params["pocd_min"]),
                theta_cost=theta,
            )
            self.decisions.append((r, theta))
            self.chosen_attempts = r + 1
        return flags
