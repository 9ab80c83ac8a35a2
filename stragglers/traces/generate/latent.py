"""The latent job / task / attempt model shared by the synthetic Google and Alibaba traces.

A job is the unit NURD predicts over (a Google job, an Alibaba task); its tasks run one or
more attempts. Tasks straggle through mechanisms, each with a fraction and a strength knob
(slow machines, memory pressure, disk contention, data skew, evictions and failures, silent
stragglers, and decoys that look slow but are not): the features show each mechanism's cause,
the latency shows cause x the job's severity, and a chosen fraction of jobs is heavy-tailed,
the regime of the paper's Figure 1. Times are relative to the job's submission; the trace
writers place jobs on the trace's clock. The model and its knobs: docs/generator.md.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

import numpy as np

from stragglers.formats.dataset_spec import MIN_TASKS
from stragglers.formats.raw import EventType

# Job kinds: which downstream filter (if any) a job is meant to fail.
JOB_ELIGIBLE = 0  # >= 100 tasks (Google: production priority too)
JOB_SMALL = 1  # fewer than 100 tasks
JOB_NONPRODUCTION = 2  # Google only: priority outside 9..11

ELIGIBLE_MIN_TASKS = MIN_TASKS  # the paper's filter, the conversion's default `min_tasks`

# Signature channels: how a mechanism shows in the features (log-multipliers).
CHANNELS = ("cpu_interference", "memory", "disk", "data")
CH_CPU, CH_MEMORY, CH_DISK, CH_DATA = range(4)

# Mechanism bits in Tasks.mechanisms (any attempt of the task was affected).
MECH_SLOW_MACHINE = 1
MECH_MEMORY = 2
MECH_DISK = 4
MECH_DATA_SKEW = 8
MECH_SILENT = 16
MECH_EVICTED = 32
MECH_FAILED = 64
MECH_DECOY = 128
MECHANISM_NAMES = {
    MECH_SLOW_MACHINE: "slow_machine",
    MECH_MEMORY: "memory_pressure",
    MECH_DISK: "disk_contention",
    MECH_DATA_SKEW: "data_skew",
    MECH_SILENT: "silent",
    MECH_EVICTED: "evicted",
    MECH_FAILED: "failed",
    MECH_DECOY: "decoy",
}

# Fixed shape parameters of the cause draws (the knobs scale them).
_CAUSE_LOG_SD = 0.6  # spread of a mechanism's cause size across affected tasks (median 1)
_SIGNATURE_PER_CAUSE = 0.5  # signature = log(1 + 0.5 * cause): median 0.41 (x1.5 at beta 1)
_SIGNATURE_COUPLING_SD = 0.25  # how loosely a signature's size follows its cause
_INTERRUPTION_SHAPE = 0.05  # gamma shape of per-job eviction/failure rates (most jobs: none)
_SIZE_COUPLING = 0.4  # how much of a task's normal size variation shows in data features
_MAX_INTERRUPTIONS = 5
_MAX_SEVERITY = 2.0  # keeps the longest straggler within ~10x its job's median
_RESUBMIT_GAP_S = 10e-6  # a resubmission follows an EVICT/FAIL by ~10 µs in the real trace


@dataclass(frozen=True)
class WorkloadConfig:
    """Knobs shared by both synthetic traces, each described beside its default."""

    n_jobs: int = 30  # jobs that pass every filter (>= 100 tasks; Google: production)
    seed: int = 0
    min_tasks: int = (
        ELIGIBLE_MIN_TASKS  # tasks per eligible job: log-uniform in [min_tasks, max_tasks]
    )
    max_tasks: int = 400
    small_job_fraction: float = 0.2  # extra jobs with < 100 tasks, per eligible job
    small_job_min_tasks: int = 5
    job_interarrival_s: float = 240.0  # mean gap between job submissions
    median_task_duration_s: float = 2400.0  # median over jobs of a job's typical task run time
    job_duration_spread: float = 0.5  # sd of log typical run time across jobs
    within_job_spread: float = 0.095  # median over jobs of the sd of log task work in a job
    within_job_spread_variation: float = 0.9  # sd of log within_job_spread across jobs
    queue_delay_s: float = 3.0  # mean wait from SUBMIT to first SCHEDULE
    restart_delay_s: float = 15.0  # mean wait from resubmission to the next SCHEDULE
    n_machines: int = 12500
    # mechanisms: fraction of tasks (machines for slow_machine) affected, and strength
    slow_machine_fraction: float = 0.03
    slow_machine_strength: float = 1.0
    memory_pressure_fraction: float = 0.03
    memory_pressure_strength: float = 1.0
    disk_contention_fraction: float = 0.03
    disk_contention_strength: float = 1.0
    data_skew_fraction: float = 0.03
    data_skew_strength: float = 1.0
    silent_straggler_fraction: float = 0.02
    silent_straggler_strength: float = 1.0
    decoy_fraction: float = 0.03  # attempts with a signature but no slowdown
    evict_fraction: float = 0.006  # mean over jobs of the fraction of tasks evicted
    fail_fraction: float = 0.002  # same for failures
    repeat_interruption_probability: float = 0.25  # chance of one more eviction/failure
    killed_task_fraction: float = 0.004  # tasks killed while running (never finish)
    median_slowdown: float = 0.04  # median over jobs of the extra run time per unit cause
    job_severity_spread: float = 1.15  # sd of log job severity (sensitivity to the causes)
    heavy_tail_job_fraction: float = 0.06  # jobs with heavy_tail_severity instead
    heavy_tail_severity: float = 0.8  # median severity of heavy-tailed jobs
    signature_strength: float = 1.0  # 0 = mechanisms leave no trace in the features
    feature_noise: float = 1.0  # scales task-to-task and window-to-window feature noise

    # inclusive ranges of integer knobs: name -> (low, high); None = unbounded
    _RULES: ClassVar[dict[str, tuple[float | None, float | None]]] = {
        "n_jobs": (1, None),
        "seed": (0, None),
        "min_tasks": (ELIGIBLE_MIN_TASKS, None),
        "max_tasks": (ELIGIBLE_MIN_TASKS, None),
        "small_job_min_tasks": (1, ELIGIBLE_MIN_TASKS - 1),
        "n_machines": (1, None),
    }
    _FRACTIONS: ClassVar[tuple[str, ...]] = (
        "small_job_fraction",
        "slow_machine_fraction",
        "memory_pressure_fraction",
        "disk_contention_fraction",
        "data_skew_fraction",
        "silent_straggler_fraction",
        "decoy_fraction",
        "evict_fraction",
        "fail_fraction",
        "repeat_interruption_probability",
        "killed_task_fraction",
        "heavy_tail_job_fraction",
    )
    _POSITIVE: ClassVar[tuple[str, ...]] = (
        "job_interarrival_s",
        "median_task_duration_s",
        "heavy_tail_severity",
    )

    def __post_init__(self) -> None:
        name = type(self).__name__
        hints = typing.get_type_hints(type(self))
        for f in fields(self):
            value = getattr(self, f.name)
            expected = hints[f.name]
            if expected is bool:
                ok = isinstance(value, bool)
            elif expected is int:
                ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
            elif expected is float:
                ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
                    value, bool
                )
                ok = ok and bool(np.isfinite(value))
            else:
                ok = True
            if not ok:
                raise ValueError(
                    f"{name}: setting {f.name!r} must be {expected.__name__}, got {value!r}"
                )
            if isinstance(value, np.generic):  # plain Python values (JSON-able config)
                object.__setattr__(self, f.name, value.item())
        for key, (low, high) in self._RULES.items():
            value = getattr(self, key)
            if (low is not None and value < low) or (high is not None and value > high):
                raise ValueError(f"{name}: setting {key!r}={value!r} must lie in [{low}, {high}]")
        for key in self._FRACTIONS:
            value = getattr(self, key)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name}: setting {key!r}={value!r} must lie in [0, 1]")
        for key in self._POSITIVE:
            if getattr(self, key) <= 0:
                raise ValueError(f"{name}: setting {key!r} must be > 0")
        for f in fields(self):
            if f.name.endswith(("_strength", "_spread", "_variation", "_delay_s")) or f.name in (
                "median_slowdown",
                "feature_noise",
            ):
                if getattr(self, f.name) < 0:
                    raise ValueError(f"{name}: setting {f.name!r} must be >= 0")
        if self.min_tasks > self.max_tasks:
            raise ValueError(
                f"{name}: min_tasks={self.min_tasks} exceeds max_tasks={self.max_tasks}"
            )

    @classmethod
    def from_dict(cls, settings: Mapping[str, Any] | None):
        """Build a config from a mapping; unknown keys are an error naming the key."""
        settings = dict(settings or {})
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(settings) - set(known))
        if unknown:
            raise ValueError(
                f"{cls.__name__}: unknown setting {unknown[0]!r}"
                + (f" (and {unknown[1:]})" if len(unknown) > 1 else "")
                + f"; known settings: {', '.join(known)}"
            )
        return cls(**settings)

    @classmethod
    def coerce(cls, config):
        """A config of this class from None (defaults), a mapping, or an instance."""
        if config is None:
            return cls()
        if isinstance(config, Mapping):
            return cls.from_dict(config)
        if not isinstance(config, cls):
            raise TypeError(
                f"expected a {cls.__name__} or a mapping of its settings, "
                f"got {type(config).__name__}"
            )
        return config

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Machines:
    overload: np.ndarray  # cause size of a machine's overload (0 = healthy)


@dataclass
class Jobs:
    kind: np.ndarray  # JOB_ELIGIBLE / JOB_SMALL / JOB_NONPRODUCTION
    n_tasks: np.ndarray  # tasks including killed ones
    first_task: np.ndarray  # offset of the job's first task in Tasks
    typical_duration: np.ndarray  # seconds, median nominal run time of its tasks
    work_spread: np.ndarray  # sd of log task work
    severity: np.ndarray  # slowdown per unit of cause for the job's tasks
    heavy_tail: np.ndarray  # bool
    evict_probability: np.ndarray
    fail_probability: np.ndarray


@dataclass
class Tasks:
    job: np.ndarray
    index: np.ndarray  # task index within its job, 0..n_tasks-1
    killed: np.ndarray  # bool: ends with KILL, never finishes
    submit: np.ndarray  # s after job submission
    nominal_work: np.ndarray  # s of run time on a healthy machine without data skew
    work: np.ndarray  # s of run time on a healthy machine (data skew included)
    size_z: np.ndarray  # size deviation (about standard normal, within (-2, 2))
    data_skew_cause: np.ndarray  # cause size of the task's extra data (0 = none)
    silent_slowdown: np.ndarray  # extra run time factor - 1 with no signature
    n_evictions: np.ndarray
    n_failures: np.ndarray
    n_attempts: np.ndarray
    first_attempt: np.ndarray
    mechanisms: np.ndarray  # bit set of MECH_* over the task's attempts
    end: np.ndarray  # s after job submission: FINISH (or KILL) of the last attempt
    first_schedule: np.ndarray


@dataclass
class Attempts:
    task: np.ndarray
    number: np.ndarray  # 0 for the first attempt of a task
    machine: np.ndarray  # index into Machines
    start: np.ndarray  # s after job submission (SCHEDULE)
    end: np.ndarray  # s after job submission (FINISH / EVICT / FAIL / KILL)
    end_event: np.ndarray  # EventType code of the event ending the attempt
    onset: np.ndarray  # s after job submission when memory/disk contention begins
    signature: np.ndarray  # (n_attempts, len(CHANNELS)) log-multiplier intensities
    slowdown: np.ndarray  # full-run wall time / work


@dataclass
class Workload:
    config: WorkloadConfig
    machines: Machines
    jobs: Jobs
    tasks: Tasks
    attempts: Attempts


def group_offsets(counts: np.ndarray) -> np.ndarray:
    """Start offset of each group in a flat array of groups with these sizes."""
    counts = np.asarray(counts, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)


def rank_within_groups(counts: np.ndarray) -> np.ndarray:
    """0..count-1 for each group, concatenated."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    return np.arange(total, dtype=np.int64) - np.repeat(group_offsets(counts), counts)


def log_uniform_integers(rng: np.random.Generator, low: int, high: int, size: int) -> np.ndarray:
    """Integers in [low, high], roughly uniform in log scale."""
    values = np.exp(rng.uniform(np.log(low), np.log(high + 1), size))
    return np.clip(np.floor(values).astype(np.int64), low, high)


def draw_cause(rng: np.random.Generator, affected: np.ndarray, strength: float) -> np.ndarray:
    """Cause size (median `strength`) where affected, else 0."""
    draw = strength * np.exp(rng.normal(0.0, _CAUSE_LOG_SD, len(affected)))
    return np.where(affected, draw, 0.0)


def signature_of(cause: np.ndarray) -> np.ndarray:
    """Log-multiplier a cause of this size leaves in the features (before coupling noise)."""
    return np.log1p(_SIGNATURE_PER_CAUSE * cause)


def sample_machines(config: WorkloadConfig, rng: np.random.Generator) -> Machines:
    slow = rng.random(config.n_machines) < config.slow_machine_fraction
    return Machines(overload=draw_cause(rng, slow, config.slow_machine_strength))


def sample_jobs(
    config: WorkloadConfig, kinds: np.ndarray, rng: np.random.Generator
) -> tuple[Jobs, np.ndarray]:
    """Per-job parameters; also returns the number of killed tasks per job."""
    kinds = np.asarray(kinds, dtype=np.int8)
    n = len(kinds)
    small = kinds == JOB_SMALL
    n_finishing = np.where(
        small,
        log_uniform_integers(rng, config.small_job_min_tasks, ELIGIBLE_MIN_TASKS - 1, n),
        log_uniform_integers(rng, config.min_tasks, config.max_tasks, n),
    )
    n_killed = rng.binomial(n_finishing, config.killed_task_fraction)
    # Exactly round(fraction * count) eligible jobs are heavy-tailed, so that even a small
    # dataset covers both regimes of Figure 1; other jobs draw independently.
    heavy = rng.random(n) < config.heavy_tail_job_fraction
    eligible = np.flatnonzero(kinds == JOB_ELIGIBLE)
    n_heavy = int(round(config.heavy_tail_job_fraction * len(eligible)))
    heavy[eligible] = False
    heavy[rng.permutation(eligible)[:n_heavy]] = True
    severity = config.median_slowdown * np.exp(rng.normal(0.0, config.job_severity_spread, n))
    # heavy-tailed jobs: slowdowns large enough that the slowest task outlasts twice the p90
    heavy_severity = config.heavy_tail_severity * np.exp(rng.normal(0.0, 0.3, n))
    severity = np.minimum(np.where(heavy, heavy_severity, severity), _MAX_SEVERITY)
    # Interruption rates are strongly skewed across jobs (most jobs have none, a few have
    # many): a gamma with a small shape keeps the configured mean.
    scale = 1.0 / _INTERRUPTION_SHAPE
    evict = config.evict_fraction * rng.gamma(_INTERRUPTION_SHAPE, scale, n)
    fail = config.fail_fraction * rng.gamma(_INTERRUPTION_SHAPE, scale, n)
    jobs = Jobs(
        kind=kinds,
        n_tasks=(n_finishing + n_killed).astype(np.int64),
        first_task=np.zeros(n, np.int64),
        typical_duration=config.median_task_duration_s
        * np.exp(rng.normal(0.0, config.job_duration_spread, n)),
        work_spread=config.within_job_spread
        * np.exp(rng.normal(0.0, config.within_job_spread_variation, n)),
        severity=severity,
        heavy_tail=heavy,
        evict_probability=np.minimum(evict, 0.5),
        fail_probability=np.minimum(fail, 0.5),
    )
    jobs.first_task = group_offsets(jobs.n_tasks)
    return jobs, n_killed


def sample_tasks(
    config: WorkloadConfig, jobs: Jobs, n_killed: np.ndarray, rng: np.random.Generator
) -> Tasks:
    n = int(jobs.n_tasks.sum())
    job = np.repeat(np.arange(len(jobs.n_tasks)), jobs.n_tasks)
    index = rank_within_groups(jobs.n_tasks)
    # killed tasks sit at random task indices: rank tasks of a job by a random key
    order = np.lexsort((rng.random(n), job))
    random_rank = np.empty(n, np.int64)
    random_rank[order] = rank_within_groups(jobs.n_tasks)
    killed = random_rank < np.repeat(n_killed, jobs.n_tasks)
    severity = jobs.severity[job]

    # normal size variation is bounded (tasks of a job get similar shares of the work):
    # a standard normal squashed into (-2, 2)
    size_z = 2.0 * np.tanh(rng.normal(0.0, 1.0, n) / 2.0)
    skew_cause = draw_cause(
        rng, rng.random(n) < config.data_skew_fraction, config.data_skew_strength
    )
    silent_cause = draw_cause(
        rng, rng.random(n) < config.silent_straggler_fraction, config.silent_straggler_strength
    )
    nominal_work = jobs.typical_duration[job] * np.exp(jobs.work_spread[job] * size_z)
    work = nominal_work * (1.0 + severity * skew_cause)
    # interruptions: a first one with the job's probability, then more with a fixed chance
    extra = rng.geometric(1.0 - config.repeat_interruption_probability, (2, n)) - 1
    n_evictions = (rng.random(n) < jobs.evict_probability[job]) * (1 + extra[0])
    n_failures = (rng.random(n) < jobs.fail_probability[job]) * (1 + extra[1])
    n_evictions = np.minimum(n_evictions, _MAX_INTERRUPTIONS)
    n_failures = np.minimum(n_failures, _MAX_INTERRUPTIONS - n_evictions)

    mechanisms = (
        np.where(skew_cause > 0, MECH_DATA_SKEW, 0)
        | np.where(silent_cause > 0, MECH_SILENT, 0)
        | np.where(n_evictions > 0, MECH_EVICTED, 0)
        | np.where(n_failures > 0, MECH_FAILED, 0)
    ).astype(np.int64)
    n_attempts = (1 + n_evictions + n_failures).astype(np.int64)
    return Tasks(
        job=job,
        index=index,
        killed=killed,
        submit=rng.uniform(0.0, 0.5, n),
        nominal_work=nominal_work,
        work=work,
        size_z=size_z,
        data_skew_cause=skew_cause,
        silent_slowdown=severity * silent_cause,
        n_evictions=n_evictions.astype(np.int64),
        n_failures=n_failures.astype(np.int64),
        n_attempts=n_attempts,
        first_attempt=group_offsets(n_attempts),
        mechanisms=mechanisms,
        end=np.zeros(n),
        first_schedule=np.zeros(n),
    )


def _interruption_events(tasks: Tasks, rng: np.random.Generator) -> np.ndarray:
    """EVICT/FAIL codes of each task's interruptions, shuffled within the task."""
    n_interruptions = tasks.n_evictions + tasks.n_failures
    owner = np.repeat(np.arange(len(n_interruptions)), n_interruptions)
    is_evict = rank_within_groups(n_interruptions) < np.repeat(tasks.n_evictions, n_interruptions)
    codes = np.where(is_evict, int(EventType.EVICT), int(EventType.FAIL))
    return codes[np.lexsort((rng.random(len(owner)), owner))]


def sample_attempts(
    config: WorkloadConfig,
    jobs: Jobs,
    tasks: Tasks,
    machines: Machines,
    rng: np.random.Generator,
) -> Attempts:
    n_tasks = len(tasks.job)
    task = np.repeat(np.arange(n_tasks), tasks.n_attempts)
    n = len(task)
    number = rank_within_groups(tasks.n_attempts)
    is_last = number == np.repeat(tasks.n_attempts - 1, tasks.n_attempts)
    job = tasks.job[task]
    severity = jobs.severity[job]

    end_event = np.full(n, int(EventType.FINISH), np.int8)
    end_event[~is_last] = _interruption_events(tasks, rng)
    end_event[is_last & tasks.killed[task]] = int(EventType.KILL)

    machine = rng.integers(0, len(machines.overload), n)
    machine_cause = machines.overload[machine]
    memory_cause = draw_cause(
        rng, rng.random(n) < config.memory_pressure_fraction, config.memory_pressure_strength
    )
    disk_cause = draw_cause(
        rng, rng.random(n) < config.disk_contention_fraction, config.disk_contention_strength
    )
    # Contention starts somewhere in the first half of the run; before it the attempt runs
    # at the machine's (and the task's silent) pace, after it slower still.
    onset_fraction = rng.uniform(0.0, 0.5, n)
    base_pace = (1.0 + tasks.silent_slowdown[task]) * (1.0 + severity * machine_cause)
    contention = (1.0 + severity * memory_cause) * (1.0 + severity * disk_cause)
    slowdown = base_pace * (onset_fraction + (1.0 - onset_fraction) * contention)
    full_run = tasks.work[task] * slowdown
    onset_after_start = onset_fraction * tasks.work[task] * base_pace

    run = full_run.copy()
    interrupted = ~is_last
    run[interrupted] *= rng.uniform(0.05, 0.95, int(interrupted.sum()))
    killed_run = is_last & tasks.killed[task]
    run[killed_run] *= rng.uniform(0.1, 0.9, int(killed_run.sum()))
    # the gap before the next attempt: resubmission right away, then a scheduling wait
    wait = rng.exponential(config.restart_delay_s, n)
    gap = np.where(interrupted, _RESUBMIT_GAP_S + 1e-3 + wait, 0.0)
    first_schedule = tasks.submit + 1e-3 + rng.exponential(config.queue_delay_s, n_tasks)
    step = run + gap
    before = np.cumsum(step) - step  # sum of all earlier steps (across tasks)
    start = first_schedule[task] + before - before[tasks.first_attempt][task]
    end = start + run

    # signatures: log-multipliers of the features, loosely coupled to the causes
    coupling = np.exp(rng.normal(0.0, _SIGNATURE_COUPLING_SD, (n, len(CHANNELS))))
    signature = np.zeros((n, len(CHANNELS)))
    signature[:, CH_CPU] = signature_of(machine_cause)
    signature[:, CH_MEMORY] = signature_of(memory_cause)
    signature[:, CH_DISK] = signature_of(disk_cause)
    signature[:, CH_DATA] = signature_of(tasks.data_skew_cause[task])
    signature *= coupling
    # a task's normal size variation shows a little in its data features
    signature[:, CH_DATA] += _SIZE_COUPLING * jobs.work_spread[job] * tasks.size_z[task]
    # decoys: one channel's signature, as large as a real one's, without any slowdown
    decoy = rng.random(n) < config.decoy_fraction
    decoy_channel = rng.integers(0, len(CHANNELS), n)
    signature[np.arange(n), decoy_channel] += signature_of(draw_cause(rng, decoy, 1.0))
    signature *= config.signature_strength

    attempt_mechanisms = (
        np.where(machine_cause > 0, MECH_SLOW_MACHINE, 0)
        | np.where(memory_cause > 0, MECH_MEMORY, 0)
        | np.where(disk_cause > 0, MECH_DISK, 0)
        | np.where(decoy, MECH_DECOY, 0)
    )
    tasks.mechanisms |= np.bitwise_or.reduceat(attempt_mechanisms, tasks.first_attempt)
    tasks.first_schedule = first_schedule
    tasks.end = end[tasks.first_attempt + tasks.n_attempts - 1]
    return Attempts(
        task=task,
        number=number,
        machine=machine,
        start=start,
        end=end,
        end_event=end_event,
        onset=start + onset_after_start,
        signature=signature,
        slowdown=slowdown,
    )


def sample_workload(
    config: WorkloadConfig, kinds: np.ndarray, rng: np.random.Generator
) -> Workload:
    """Draw machines, jobs, tasks and attempts for jobs of the given kinds."""
    machines = sample_machines(config, rng)
    jobs, n_killed = sample_jobs(config, kinds, rng)
    tasks = sample_tasks(config, jobs, n_killed, rng)
    attempts = sample_attempts(config, jobs, tasks, machines, rng)
    return Workload(config=config, machines=machines, jobs=jobs, tasks=tasks, attempts=attempts)


def job_kinds(n_eligible: int, extra: dict[int, int], rng: np.random.Generator) -> np.ndarray:
    """Kinds of all jobs in submission order: n_eligible eligible plus extra[kind] others."""
    kinds = np.concatenate(
        [np.full(n_eligible, JOB_ELIGIBLE, np.int8)]
        + [np.full(count, kind, np.int8) for kind, count in sorted(extra.items())]
    )
    return kinds[rng.permutation(len(kinds))]


def round_significant(values: np.ndarray, digits: int = 4) -> np.ndarray:
    """Round to `digits` significant digits, so that the CSV shows e.g. 0.001562.

    Scaling by an exact power of ten, rounding and dividing back yields the double nearest
    to the short decimal, so shortest-repr printing shows exactly `digits` digits.
    """
    values = np.asarray(values, dtype=np.float64)
    out = values.copy()
    ok = np.isfinite(values) & (values != 0)
    exponent = np.floor(np.log10(np.abs(values[ok])))
    shift = (digits - 1 - exponent).astype(np.int64)
    # 10**k is exact in float64 for 0 <= k <= 22; larger shifts are not needed for our data
    shift = np.clip(shift, -22, 22)
    scale = 10.0 ** np.abs(shift)
    positive = shift >= 0
    v = values[ok]
    out[ok] = np.where(positive, np.round(v * scale) / scale, np.round(v / scale) * scale)
    return out
