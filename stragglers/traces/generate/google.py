"""Synthetic Google clusterdata-2011-2 trace in the raw format (job_events, task_events,
task_usage: headerless gzip CSV parts; machine_events: one part; column orders from
`stragglers.formats.raw`). The latent workload (`stragglers.traces.generate.latent`) is placed
on the trace's clock (from 600 s): its attempts become SCHEDULE / FINISH / EVICT / FAIL / KILL
events with resubmissions, and usage windows on the 300 s grid cut at the attempts' starts and
ends. Parts split the trace by time into about equal numbers of events (docs/generator.md,
"Output formats").
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from stragglers.formats.dataset_spec import PRODUCTION_PRIORITIES
from stragglers.formats.raw import (
    GOOGLE_JOB_EVENTS,
    GOOGLE_MACHINE_EVENTS,
    GOOGLE_MACHINE_EVENTS_PART,
    GOOGLE_TASK_EVENTS,
    GOOGLE_TASK_USAGE,
    GOOGLE_TRACE_START_US,
    GOOGLE_WINDOW_US,
    EventType,
    MachineEventType,
    google_part_name,
)
from stragglers.traces.generate import writing
from stragglers.traces.generate.latent import (
    CH_DISK,
    CH_MEMORY,
    CHANNELS,
    JOB_ELIGIBLE,
    JOB_NONPRODUCTION,
    JOB_SMALL,
    MECHANISM_NAMES,
    Workload,
    WorkloadConfig,
    job_kinds,
    round_significant,
    sample_workload,
)

_US = 1_000_000
_BLOCK_SLOTS = 12  # usage windows are built one hour of grid slots at a time


@dataclass(frozen=True)
class GoogleGeneratorConfig(WorkloadConfig):
    """Knobs of the synthetic Google trace (shared knobs: `WorkloadConfig`)."""

    n_parts: int = 2  # files per table, splitting the trace by time
    nonproduction_job_fraction: float = 0.2  # extra >=100-task jobs with priority < 9, per job
    aggregated_job_fraction: float = 0.7  # jobs with aggregation_type 1 (sampled CPU = 0)
    missing_counter_machine_fraction: float = 0.04  # machines without CPI/MAI counters
    missing_value_fraction: float = 0.02  # windows missing maximum_disk_io_time (MAI: half)
    gzip_level: int = 1  # gzip compression level (1: fast; the format is the same)
    write_truth: bool = True  # also write generator_truth.csv.gz (per-task ground truth)
    # usage-record mechanisms measured on the real jobs' windows (docs/generator.md, "The
    # model", step 5); 0 = off, and the tables are then as without them
    idle_start_median: float = 0.0  # median share of an attempt's run idle at its start
    usage_fluctuation_sd: float = 0.0  # log sd of a per-window AR(1) factor on the resources
    usage_cuts_per_attempt: float = 0.0  # mean (Poisson) extra cuts of an attempt's records
    final_usage_window_s: float = 0.0  # length of an attempt's last usage record

    _RULES = {
        **WorkloadConfig._RULES,
        "n_parts": (2, 99_999),
        "gzip_level": (0, 9),
    }
    _FRACTIONS = WorkloadConfig._FRACTIONS + (
        "nonproduction_job_fraction",
        "aggregated_job_fraction",
        "missing_counter_machine_fraction",
        "missing_value_fraction",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        name = type(self).__name__
        if not 0.0 <= self.idle_start_median < 1.0:
            raise ValueError(
                f"{name}: setting 'idle_start_median'={self.idle_start_median!r} must lie in [0, 1)"
            )
        for key in ("usage_fluctuation_sd", "usage_cuts_per_attempt", "final_usage_window_s"):
            if getattr(self, key) < 0:
                raise ValueError(f"{name}: setting {key!r} must be >= 0")


# Usage columns drawn in log space: job-level median and spread across jobs (matched to the
# first 10,000 real task_usage rows), task-to-task and window-to-window sd, and the
# log-multiplier per unit of each signature channel (cpu_interference, memory, disk, data).
_BASE_FEATURES = {
    "cpu_rate": (0.007, 1.5, 0.08, 0.15, (-0.7, -0.1, -0.4, 0.0)),
    "canonical_memory_usage": (0.018, 1.2, 0.03, 0.03, (0.0, 0.6, 0.0, 0.25)),
    "unmapped_page_cache": (0.003, 1.2, 0.3, 0.3, (0.0, 1.2, 0.3, 0.5)),
    "disk_io_time": (0.0008, 1.5, 0.25, 0.35, (0.0, 0.3, 1.5, 0.8)),
    "local_disk_space_usage": (0.00004, 1.2, 0.03, 0.03, (0.0, 0.0, 0.2, 1.0)),
    "cycles_per_instruction": (2.6, 0.45, 0.08, 0.1, (0.9, 0.3, 0.1, 0.0)),
    "memory_accesses_per_instruction": (0.0065, 0.9, 0.1, 0.12, (0.6, 0.5, 0.0, 0.0)),
}
# Columns derived from a base column by a ratio >= 1 (max >= mean, assigned >= used, total
# page cache >= unmapped): base, median ratio, its spread across jobs, window sd, channel
# log-multipliers on the ratio.
_DERIVED_FEATURES = {
    "assigned_memory_usage": ("canonical_memory_usage", 1.3, 0.2, 0.01, (0.0, 0.1, 0.0, 0.0)),
    "maximum_memory_usage": ("canonical_memory_usage", 1.02, 0.02, 0.01, (0.0, 0.2, 0.0, 0.0)),
    "total_page_cache": ("unmapped_page_cache", 2.0, 0.4, 0.2, (0.0, 0.0, 0.0, 0.0)),
    "maximum_cpu_rate": ("cpu_rate", 6.0, 0.5, 0.25, (0.4, 0.0, 0.0, 0.1)),
    "maximum_disk_io_time": ("disk_io_time", 15.0, 0.6, 0.4, (0.0, 0.0, 0.3, 0.0)),
}
_MACHINE_SD = {"cycles_per_instruction": 0.12, "memory_accesses_per_instruction": 0.1}
_UNBOUNDED = {"cycles_per_instruction", "memory_accesses_per_instruction"}  # not normalised
_CONTENTION_CHANNELS = (CH_MEMORY, CH_DISK)  # channels active only after the onset
# Usage-record mechanisms (knobs idle_start_median, usage_fluctuation_sd,
# usage_cuts_per_attempt, final_usage_window_s; docs/generator.md, "The model", step 5).
# a + b of the Beta idle share (the real jobs' leading idle share: q25-q75 0.18-0.59)
_IDLE_CONCENTRATION = 4.0
_FLUCTUATION_AUTOCORRELATION = 0.5  # AR(1) coefficient from one usage window to the next
# resource columns sharing one fluctuation series (derived columns follow their base column):
# CPU, the memory family (memory and page cache), disk I/O time, local disk space
_FLUCTUATION_FAMILY = {
    "cpu_rate": 0,
    "canonical_memory_usage": 1,
    "unmapped_page_cache": 1,
    "disk_io_time": 2,
    "local_disk_space_usage": 3,
}
_N_FLUCTUATION_FAMILIES = 4


@dataclass
class _Meta:
    """Trace-level attributes of jobs, tasks and machines."""

    job_id: np.ndarray
    job_submit_us: np.ndarray
    user: np.ndarray  # index into user_names
    user_names: list[str]
    job_name: list[str]
    logical_job_name: list[str]
    scheduling_class: np.ndarray
    priority: np.ndarray
    cpu_request: np.ndarray
    memory_request: np.ndarray
    disk_space_request: np.ndarray
    different_machines: np.ndarray
    aggregation_type: np.ndarray
    machine_id: np.ndarray
    machine_has_counters: np.ndarray
    job_log_level: np.ndarray  # (n_jobs, n_base)
    job_log_ratio: np.ndarray  # (n_jobs, n_derived)
    task_log_deviation: np.ndarray  # (n_tasks, n_base)
    machine_log_deviation: np.ndarray  # (n_machines, n_base)


def _hash_name(*parts: object) -> str:
    """A 44-character base64 name like the trace's hashed user and job names."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return base64.b64encode(digest).decode()


def _sample_meta(
    config: GoogleGeneratorConfig, workload: Workload, rng: np.random.Generator
) -> _Meta:
    jobs, tasks = workload.jobs, workload.tasks
    n_jobs, n_tasks = len(jobs.kind), len(tasks.job)
    n_machines = len(workload.machines.overload)
    gaps = rng.exponential(config.job_interarrival_s, n_jobs)
    submit_us = GOOGLE_TRACE_START_US + np.round(np.cumsum(gaps) * _US).astype(np.int64)
    job_id = 6_251_000_000 + np.cumsum(rng.integers(1, 3000, n_jobs)).astype(np.int64)

    n_users = max(3, n_jobs // 4)
    user = rng.integers(0, n_users, n_jobs)
    user_names = [_hash_name(config.seed, "user", u) for u in range(n_users)]
    logical = rng.integers(0, max(2, n_jobs // 2), n_jobs)
    job_name = [_hash_name(config.seed, "job", int(j)) for j in job_id]
    logical_job_name = [
        _hash_name(config.seed, "logical", int(u), int(q)) for u, q in zip(user, logical)
    ]

    production = rng.choice(PRODUCTION_PRIORITIES, n_jobs, p=[0.86, 0.02, 0.12])
    other = rng.choice([0, 1, 2, 8], n_jobs, p=[0.3, 0.1, 0.55, 0.05])
    priority = np.where(jobs.kind == JOB_NONPRODUCTION, other, production)

    base_names = list(_BASE_FEATURES)
    median = np.log([_BASE_FEATURES[f][0] for f in base_names])
    spread = np.array([_BASE_FEATURES[f][1] for f in base_names])
    task_sd = np.array([_BASE_FEATURES[f][2] for f in base_names]) * config.feature_noise
    job_log_level = median + spread * rng.normal(size=(n_jobs, len(base_names)))
    derived = list(_DERIVED_FEATURES.values())
    ratio_median = np.log([d[1] for d in derived])
    ratio_spread = np.array([d[2] for d in derived])
    job_log_ratio = ratio_median + ratio_spread * rng.normal(size=(n_jobs, len(derived)))
    job_log_ratio = np.maximum(job_log_ratio, 0.0)
    task_log_deviation = task_sd * rng.normal(size=(n_tasks, len(base_names)))
    machine_sd = np.array([_MACHINE_SD.get(f, 0.0) for f in base_names])
    machine_log_deviation = machine_sd * rng.normal(size=(n_machines, len(base_names)))

    canonical = np.exp(job_log_level[:, base_names.index("canonical_memory_usage")])
    local_disk = np.exp(job_log_level[:, base_names.index("local_disk_space_usage")])
    return _Meta(
        job_id=job_id,
        job_submit_us=submit_us,
        user=user,
        user_names=user_names,
        job_name=job_name,
        logical_job_name=logical_job_name,
        scheduling_class=rng.choice(4, n_jobs, p=[0.35, 0.25, 0.25, 0.15]),
        priority=priority,
        cpu_request=rng.choice([0.00625, 0.0125, 0.025, 0.03125, 0.0625, 0.125, 0.25], n_jobs),
        memory_request=round_significant(
            np.minimum(canonical * np.exp(rng.normal(0.4, 0.2, n_jobs)), 1.0)
        ),
        disk_space_request=round_significant(
            np.minimum(local_disk * np.exp(rng.normal(1.0, 0.3, n_jobs)), 1.0)
        ),
        different_machines=(rng.random(n_jobs) < 0.4).astype(np.int64),
        aggregation_type=(rng.random(n_jobs) < config.aggregated_job_fraction).astype(np.int64),
        machine_id=rng.permutation(
            1_000_000 + np.cumsum(rng.integers(1, max(2, 6_000_000_000 // n_machines), n_machines))
        ).astype(np.int64),
        machine_has_counters=rng.random(n_machines) >= config.missing_counter_machine_fraction,
        job_log_level=job_log_level,
        job_log_ratio=job_log_ratio,
        task_log_deviation=task_log_deviation,
        machine_log_deviation=machine_log_deviation,
    )


def _to_us(job_submit_us: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    return job_submit_us + np.round(seconds * _US).astype(np.int64)


@dataclass
class _Times:
    """Absolute times (µs) of tasks and attempts."""

    task_submit: np.ndarray
    attempt_start: np.ndarray
    attempt_end: np.ndarray
    resubmit: np.ndarray  # per attempt; meaningful only for EVICT/FAIL ends
    attempt_onset: np.ndarray


def _absolute_times(workload: Workload, meta: _Meta, rng: np.random.Generator) -> _Times:
    t, a = workload.tasks, workload.attempts
    job_of_attempt = t.job[a.task]
    return _Times(
        task_submit=_to_us(meta.job_submit_us[t.job], t.submit),
        attempt_start=_to_us(meta.job_submit_us[job_of_attempt], a.start),
        attempt_end=_to_us(meta.job_submit_us[job_of_attempt], a.end),
        resubmit=_to_us(meta.job_submit_us[job_of_attempt], a.end)
        + rng.integers(6, 16, len(a.task)),
        attempt_onset=_to_us(meta.job_submit_us[job_of_attempt], a.onset),
    )


def build_task_events(workload: Workload, meta: _Meta, times: _Times) -> dict[str, np.ndarray]:
    """All task events as column arrays (machine -1 = missing), sorted by time."""
    t, a = workload.tasks, workload.attempts
    interrupted = np.isin(a.end_event, (int(EventType.EVICT), int(EventType.FAIL)))
    n_t, n_a, n_r = len(t.job), len(a.task), int(interrupted.sum())
    task = np.concatenate([np.arange(n_t), a.task, a.task, a.task[interrupted]])
    timestamp = np.concatenate(
        [times.task_submit, times.attempt_start, times.attempt_end, times.resubmit[interrupted]]
    )
    event = np.concatenate(
        [
            np.full(n_t, int(EventType.SUBMIT)),
            np.full(n_a, int(EventType.SCHEDULE)),
            a.end_event.astype(np.int64),
            np.full(n_r, int(EventType.SUBMIT)),
        ]
    )
    machine = np.concatenate(
        [np.full(n_t, -1), meta.machine_id[a.machine], meta.machine_id[a.machine], np.full(n_r, -1)]
    )
    job = t.job[task]
    order = np.lexsort((t.index[task], meta.job_id[job], timestamp))
    return {
        "timestamp": timestamp[order],
        "job": job[order],
        "task_index": t.index[task][order],
        "machine_id": machine[order],
        "event_type": event[order],
    }


def task_events_columns(
    events: dict[str, np.ndarray], meta: _Meta, rows: slice
) -> dict[str, pa.Array]:
    job = events["job"][rows]
    n = len(job)
    machine = events["machine_id"][rows]
    columns = {
        "timestamp": writing.column(events["timestamp"][rows]),
        "missing_info": writing.null_column(n),
        "job_id": writing.column(meta.job_id[job]),
        "task_index": writing.column(events["task_index"][rows]),
        "machine_id": writing.column(machine, machine < 0),
        "event_type": writing.column(events["event_type"][rows]),
        "user": writing.strings(meta.user[job], meta.user_names),
        "scheduling_class": writing.column(meta.scheduling_class[job]),
        "priority": writing.column(meta.priority[job]),
        "cpu_request": writing.column(meta.cpu_request[job]),
        "memory_request": writing.column(meta.memory_request[job]),
        "disk_space_request": writing.column(meta.disk_space_request[job]),
        "different_machines_restriction": writing.column(meta.different_machines[job]),
    }
    assert list(columns) == GOOGLE_TASK_EVENTS
    return columns


# capacities normalised to the largest machine, as in the trace: most machines are of one
# platform (0.5 CPU) with a spread of memory sizes (approximate shares of the 2011 trace)
_CPU_CAPACITIES = (np.array([0.5, 0.25, 1.0]), np.array([0.92, 0.06, 0.02]))
_MEMORY_CAPACITIES = (np.array([0.2493, 0.4995, 0.749, 1.0]), np.array([0.31, 0.54, 0.10, 0.05]))
_UPDATED_MACHINE_FRACTION = 0.02  # machines whose memory is changed once (an UPDATE event)
_MISSING_CAPACITY_FRACTION = 0.001  # ADD events with empty capacity fields, as in the trace


def build_machine_events(
    meta: _Meta, horizon_us: int, rng: np.random.Generator
) -> dict[str, pa.Array]:
    """machine_events: every machine ADDed at time 0 with a platform, CPUs and memory; a few
    UPDATEs later. Capacities are independent of the latent straggler mechanisms."""
    n = len(meta.machine_id)
    platform = rng.choice(len(_CPU_CAPACITIES[0]), size=n, p=_CPU_CAPACITIES[1])
    cpus = _CPU_CAPACITIES[0][platform]
    memory = rng.choice(_MEMORY_CAPACITIES[0], size=n, p=_MEMORY_CAPACITIES[1])
    missing = rng.random(n) < _MISSING_CAPACITY_FRACTION
    updated = np.flatnonzero(rng.random(n) < _UPDATED_MACHINE_FRACTION)
    update_time = rng.integers(600 * _US, max(600 * _US + 1, horizon_us), len(updated))
    new_memory = rng.choice(_MEMORY_CAPACITIES[0], size=len(updated), p=_MEMORY_CAPACITIES[1])
    order = np.argsort(update_time, kind="stable")
    machine = np.r_[np.arange(n), updated[order]]
    timestamp = np.r_[np.zeros(n, dtype=np.int64), update_time[order]]
    platform_names = [_hash_name("platform", k) for k in range(len(_CPU_CAPACITIES[0]))]
    empty = np.r_[missing, np.zeros(len(updated), dtype=bool)]
    columns = {
        "timestamp": writing.column(timestamp),
        "machine_id": writing.column(meta.machine_id[machine]),
        "event_type": writing.column(
            np.r_[
                np.full(n, MachineEventType.ADD), np.full(len(updated), MachineEventType.UPDATE)
            ].astype(np.int64)
        ),
        "platform_id": writing.strings(platform[machine], platform_names),
        "cpus": writing.column(cpus[machine], empty),
        "memory": writing.column(np.r_[memory, new_memory[order]], empty),
    }
    assert list(columns) == GOOGLE_MACHINE_EVENTS
    return columns


def build_job_events(workload: Workload, meta: _Meta, times: _Times, rng: np.random.Generator):
    t, a = workload.tasks, workload.attempts
    n_jobs = len(meta.job_id)
    job_of_attempt = t.job[a.task]
    first_schedule = np.full(n_jobs, np.iinfo(np.int64).max)
    np.minimum.at(first_schedule, job_of_attempt, times.attempt_start)
    last_end = np.zeros(n_jobs, np.int64)
    np.maximum.at(last_end, job_of_attempt, times.attempt_end)
    finish = last_end + rng.integers(1_000, 200_000, n_jobs)  # the job ends just after
    job = np.tile(np.arange(n_jobs), 3)
    timestamp = np.concatenate([meta.job_submit_us, first_schedule, finish])
    event = np.repeat(
        [int(EventType.SUBMIT), int(EventType.SCHEDULE), int(EventType.FINISH)], n_jobs
    )
    order = np.lexsort((event, meta.job_id[job], timestamp))
    return {"timestamp": timestamp[order], "job": job[order], "event_type": event[order]}


def job_events_columns(
    events: dict[str, np.ndarray], meta: _Meta, rows: slice
) -> dict[str, pa.Array]:
    job = events["job"][rows]
    n = len(job)
    columns = {
        "timestamp": writing.column(events["timestamp"][rows]),
        "missing_info": writing.null_column(n),
        "job_id": writing.column(meta.job_id[job]),
        "event_type": writing.column(events["event_type"][rows]),
        "user": writing.strings(meta.user[job], meta.user_names),
        "scheduling_class": writing.column(meta.scheduling_class[job]),
        "job_name": writing.strings(job, meta.job_name),
        "logical_job_name": writing.strings(job, meta.logical_job_name),
    }
    assert list(columns) == GOOGLE_JOB_EVENTS
    return columns


def window_bounds(start_us: np.ndarray, end_us: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An attempt's measured span: its start and end rounded inward to whole seconds."""
    low = -((-start_us) // _US) * _US
    high = (end_us // _US) * _US
    return low, high


def grid_slot(time_us: np.ndarray) -> np.ndarray:
    return (time_us - GOOGLE_TRACE_START_US) // GOOGLE_WINDOW_US


def enumerate_windows(
    low: np.ndarray, high: np.ndarray, slot_from: int, slot_to: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Windows of spans [low, high) whose grid slot lies in [slot_from, slot_to).

    Returns (span index, window start, window end): each span is cut by the 300 s grid.
    """
    has = high > low
    first = np.where(has, grid_slot(low), 0)
    last = np.where(has, grid_slot(high - 1), -1)
    lo = np.maximum(first, slot_from)
    hi = np.minimum(last, slot_to - 1)
    counts = np.maximum(hi - lo + 1, 0)
    span = np.repeat(np.arange(len(low)), counts)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.repeat(lo, counts) + (np.arange(int(counts.sum())) - np.repeat(offsets, counts))
    grid_start = GOOGLE_TRACE_START_US + slot * GOOGLE_WINDOW_US
    start = np.maximum(low[span], grid_start)
    end = np.minimum(high[span], grid_start + GOOGLE_WINDOW_US)
    return span, start, end


def idle_beta_shape(median: float) -> tuple[float, float]:
    """Beta(a, b) with a + b = _IDLE_CONCENTRATION and about this median (the approximation
    median ~ (a - 1/3) / (a + b - 2/3), within 0.01 for medians 0.2-0.8)."""
    a = max(median * (_IDLE_CONCENTRATION - 2.0 / 3.0) + 1.0 / 3.0, 0.05)
    return a, max(_IDLE_CONCENTRATION - a, 0.05)


@dataclass
class _RecordPlan:
    """Per attempt, where its usage records are cut besides the 300 s grid, and until when it
    is idle. None: the mechanism is off."""

    idle_end: np.ndarray | None  # µs; windows ending by it read 0 in every measure
    cut_time: np.ndarray | None  # µs, sorted: extra record bounds strictly inside attempts
    cut_attempt: np.ndarray | None


def plan_usage_records(
    config: GoogleGeneratorConfig, low: np.ndarray, high: np.ndarray
) -> _RecordPlan:
    """The idle start and the extra cuts of each attempt's measured span [low, high) (whole
    seconds). Each mechanism draws from its own stream, only when on, so that with every
    knob at 0 the windows are the grid's alone and no other draw moves."""
    n = len(low)
    span_s = np.maximum(high - low, 0) // _US
    idle_end = None
    times: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    if config.idle_start_median > 0:
        rng = np.random.default_rng([config.seed, 0x1D1E])
        share = rng.beta(*idle_beta_shape(config.idle_start_median), n)
        # the idle phase is a share of the attempt's own run: slower attempts idle longer
        idle_end = low + np.floor(share * span_s).astype(np.int64) * _US
        times.append(idle_end)
        owners.append(np.arange(n))
    if config.usage_cuts_per_attempt > 0:
        rng = np.random.default_rng([config.seed, 0xC075])
        owner = np.repeat(np.arange(n), rng.poisson(config.usage_cuts_per_attempt, n))
        position = rng.random(len(owner))  # scaled to the attempt's own length
        times.append(low[owner] + np.round(position * span_s[owner]).astype(np.int64) * _US)
        owners.append(owner)
    if config.final_usage_window_s > 0:
        final_us = max(1, int(round(config.final_usage_window_s))) * _US
        times.append(high - final_us)
        owners.append(np.arange(n))
    if not times:
        return _RecordPlan(idle_end, None, None)
    time_us, owner = np.concatenate(times), np.concatenate(owners)
    inside = (time_us > low[owner]) & (time_us < high[owner])
    time_us, owner = time_us[inside], owner[inside]
    order = np.lexsort((owner, time_us))
    return _RecordPlan(idle_end, time_us[order], owner[order])


def split_windows(
    attempt: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    cut_attempt: np.ndarray,
    cut_time: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Windows (attempt, [start, end)) cut again at the given (attempt, time) points.

    Each attempt's windows must tile one interval and each cut lie inside it (as the windows
    of one block of the grid do); equal bounds merge. Returns (attempt, start, end) sorted by
    attempt and time."""
    owner = np.concatenate([attempt, attempt, cut_attempt])
    bound = np.concatenate([start, end, cut_time])
    order = np.lexsort((bound, owner))
    owner, bound = owner[order], bound[order]
    fresh = np.r_[True, (owner[1:] != owner[:-1]) | (bound[1:] != bound[:-1])]
    owner, bound = owner[fresh], bound[fresh]
    pair = owner[1:] == owner[:-1]
    return owner[:-1][pair], bound[:-1][pair], bound[1:][pair]


def fluctuation_series(
    attempt: np.ndarray, start: np.ndarray, state: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """A stationary AR(1) series (unit variance, coefficient _FLUCTUATION_AUTOCORRELATION) per
    attempt and resource family over its windows in time order: (n windows, families).

    `state` (n attempts, families) holds each attempt's last value (NaN: no window yet) and
    is updated, so the series runs on across blocks of the grid."""
    n = len(attempt)
    series = np.empty((n, _N_FLUCTUATION_FAMILIES))
    if n == 0:
        return series
    order = np.lexsort((start, attempt))
    owner = attempt[order]
    innovation = rng.standard_normal((n, _N_FLUCTUATION_FAMILIES))
    first = np.r_[True, owner[1:] != owner[:-1]]
    rank = np.arange(n) - np.flatnonzero(first)[np.cumsum(first) - 1]  # within the attempt
    rho = _FLUCTUATION_AUTOCORRELATION
    scale = np.sqrt(1.0 - rho**2)
    by_rank = np.argsort(rank, kind="stable")
    edges = np.searchsorted(rank[by_rank], np.arange(int(rank.max()) + 2))
    for r in range(len(edges) - 1):  # every attempt's r-th window at once
        rows = by_rank[edges[r] : edges[r + 1]]
        if r == 0:
            before = state[owner[rows]]
            series[rows] = np.where(
                np.isnan(before), innovation[rows], rho * before + scale * innovation[rows]
            )
        else:
            series[rows] = rho * series[rows - 1] + scale * innovation[rows]
    last = np.r_[owner[1:] != owner[:-1], True]
    state[owner[last]] = series[last]
    out = np.empty_like(series)
    out[order] = series
    return out


def window_features(
    workload: Workload,
    meta: _Meta,
    config: GoogleGeneratorConfig,
    attempt: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    onset: np.ndarray,
    rng: np.random.Generator,
    idle: np.ndarray | None = None,
    fluctuation: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Usage values of windows (attempt, [start, end)) in the trace's units; NaN = missing.

    `idle` (bool per window): every measure reads 0; `fluctuation` (windows x families): log
    multipliers of the resource families (_FLUCTUATION_FAMILY; derived columns follow)."""
    a, t = workload.attempts, workload.tasks
    task = a.task[attempt]
    job = t.job[task]
    machine = a.machine[attempt]
    n = len(attempt)
    # share of the window after the contention onset: memory/disk signatures show only then
    active = np.clip((end - np.maximum(start, onset)) / np.maximum(end - start, 1), 0.0, 1.0)
    channel = a.signature[attempt].copy()
    for c in _CONTENTION_CHANNELS:
        channel[:, c] *= active
    noise = rng.standard_normal((n, len(_BASE_FEATURES) + len(_DERIVED_FEATURES) + 1))
    uniform = rng.random((n, 2))

    values: dict[str, np.ndarray] = {}
    log_base: dict[str, np.ndarray] = {}
    for k, (name, (_, _, _, window_sd, betas)) in enumerate(_BASE_FEATURES.items()):
        log_value = (
            meta.job_log_level[job, k]
            + meta.task_log_deviation[task, k]
            + meta.machine_log_deviation[machine, k]
            + channel @ np.asarray(betas)
            + window_sd * config.feature_noise * noise[:, k]
        )
        if fluctuation is not None and name in _FLUCTUATION_FAMILY:
            log_value = log_value + fluctuation[:, _FLUCTUATION_FAMILY[name]]
        log_base[name] = log_value
        values[name] = np.exp(log_value)
    offset = len(_BASE_FEATURES)
    for k, (name, (base, _, _, window_sd, betas)) in enumerate(_DERIVED_FEATURES.items()):
        log_ratio = (
            meta.job_log_ratio[job, k]
            + channel @ np.asarray(betas)
            + window_sd * config.feature_noise * noise[:, offset + k]
        )
        values[name] = np.exp(log_base[base] + np.maximum(log_ratio, 0.0))
    for name in values:
        if name not in _UNBOUNDED:
            values[name] = np.minimum(values[name], 1.0)
    aggregated = meta.aggregation_type[job] == 1
    sampled = values["cpu_rate"] * np.exp(0.3 * config.feature_noise * noise[:, -1])
    values["sampled_cpu_usage"] = np.where(aggregated, 0.0, np.minimum(sampled, 1.0))
    no_counters = ~meta.machine_has_counters[machine]
    values["cycles_per_instruction"][no_counters] = np.nan
    mai_missing = no_counters | (uniform[:, 0] < config.missing_value_fraction / 2)
    values["memory_accesses_per_instruction"][mai_missing] = np.nan
    values["maximum_disk_io_time"][uniform[:, 1] < config.missing_value_fraction] = np.nan
    if idle is not None:
        for column in values.values():
            column[idle] = 0.0
    return values


def task_usage_columns(
    workload: Workload,
    meta: _Meta,
    attempt: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    values: dict[str, np.ndarray],
) -> dict[str, pa.Array]:
    t, a = workload.tasks, workload.attempts
    task = a.task[attempt]
    job = t.job[task]
    n = len(attempt)
    columns: dict[str, pa.Array] = {
        "start_time": writing.column(start),
        "end_time": writing.column(end),
        "job_id": writing.column(meta.job_id[job]),
        "task_index": writing.column(t.index[task]),
        "machine_id": writing.column(meta.machine_id[a.machine[attempt]]),
    }
    for name in GOOGLE_TASK_USAGE[5:17]:
        v = round_significant(values[name])
        columns[name] = writing.column(v, np.isnan(v))
    columns["sample_portion"] = writing.column(np.zeros(n, np.int64))
    columns["aggregation_type"] = writing.column(meta.aggregation_type[job])
    columns["sampled_cpu_usage"] = writing.column(round_significant(values["sampled_cpu_usage"]))
    assert list(columns) == GOOGLE_TASK_USAGE
    return columns


def part_boundaries(timestamps: np.ndarray, n_parts: int) -> np.ndarray:
    """n_parts + 1 increasing boundaries: part p covers [b[p], b[p+1]).

    Parts are time ranges holding about equally many of the given (sorted) event
    timestamps, from the trace start (600 s) to just after the last one.
    """
    timestamps = np.asarray(timestamps, dtype=np.int64)
    inner = (
        timestamps[(np.arange(1, n_parts) * len(timestamps)) // n_parts] if len(timestamps) else []
    )
    end = timestamps[-1] + 1 if len(timestamps) else GOOGLE_TRACE_START_US + 1
    bounds = np.concatenate([[GOOGLE_TRACE_START_US], inner, [end]]).astype(np.int64)
    return np.maximum.accumulate(bounds)


_PART_RE = re.compile(r"^part-\d{5}-of-\d{5}\.csv\.gz(\.partial)?$")


def _remove_stale_parts(table_dir: Path, keep: set[str]) -> None:
    """Drop part files of an earlier run with another part count (they would mix in)."""
    for path in table_dir.glob("part-*"):
        if _PART_RE.match(path.name) and path.name not in keep:
            path.unlink()


def _write_split_table(
    table_dir: Path,
    timestamps: np.ndarray,
    boundaries: np.ndarray,
    make_columns,
    gzip_level: int,
) -> tuple[list[Path], int]:
    n_parts = len(boundaries) - 1
    cuts = np.searchsorted(timestamps, boundaries)
    cuts[-1] = len(timestamps)
    paths = []
    for p in range(n_parts):
        path = table_dir / google_part_name(p, n_parts)
        rows = slice(int(cuts[p]), int(cuts[p + 1]))
        writing.write_atomic(path, writing.csv_bytes(make_columns(rows)), gzip_level)
        paths.append(path)
    _remove_stale_parts(table_dir, {p.name for p in paths})
    return paths, len(timestamps)


def _write_task_usage(
    out_dir: Path,
    workload: Workload,
    meta: _Meta,
    times: _Times,
    config: GoogleGeneratorConfig,
    boundaries: np.ndarray,
) -> tuple[list[Path], int]:
    table_dir = out_dir / "task_usage"
    n_parts = len(boundaries) - 1
    low, high = window_bounds(times.attempt_start, times.attempt_end)
    has = high > low
    first_slot = np.where(has, grid_slot(low), np.iinfo(np.int64).max)
    last_slot = np.where(has, grid_slot(high - 1), -1)
    n_slots = int(last_slot.max()) + 1 if has.any() else 0
    plan = plan_usage_records(config, low, high)
    sd = config.usage_fluctuation_sd
    state = np.full((len(low), _N_FLUCTUATION_FAMILIES), np.nan) if sd > 0 else None
    paths = [table_dir / google_part_name(p, n_parts) for p in range(n_parts)]
    part = 0
    current = writing.AtomicFile(paths[0], config.gzip_level)
    total = 0
    try:
        for block, slot_from in enumerate(range(0, n_slots, _BLOCK_SLOTS)):
            slot_to = slot_from + _BLOCK_SLOTS
            active = np.flatnonzero((first_slot < slot_to) & (last_slot >= slot_from))
            if len(active) == 0:
                continue
            span, start, end = enumerate_windows(low[active], high[active], slot_from, slot_to)
            attempt = active[span]
            if plan.cut_time is not None:  # extra cuts inside this block's slots
                block_start = GOOGLE_TRACE_START_US + slot_from * GOOGLE_WINDOW_US
                within = slice(
                    *np.searchsorted(
                        plan.cut_time, [block_start, block_start + _BLOCK_SLOTS * GOOGLE_WINDOW_US]
                    )
                )
                attempt, start, end = split_windows(
                    attempt, start, end, plan.cut_attempt[within], plan.cut_time[within]
                )
            task = workload.attempts.task[attempt]
            job_id = meta.job_id[workload.tasks.job[task]]
            order = np.lexsort((end, workload.tasks.index[task], job_id, start))
            attempt, start, end = attempt[order], start[order], end[order]
            # one random stream per block of the grid: the values do not depend on n_parts
            rng = np.random.default_rng([config.seed, 0x05A6E, block])
            fluctuation = None
            if state is not None:  # its own stream per block: the other values do not move
                series = fluctuation_series(
                    attempt, start, state, np.random.default_rng([config.seed, 0xF1C7, block])
                )
                fluctuation = sd * series - sd**2 / 2  # a mean-one log-normal factor
            values = window_features(
                workload,
                meta,
                config,
                attempt,
                start,
                end,
                times.attempt_onset[attempt],
                rng,
                idle=None if plan.idle_end is None else end <= plan.idle_end[attempt],
                fluctuation=fluctuation,
            )
            part_of = np.clip(np.searchsorted(boundaries, start, side="right") - 1, 0, n_parts - 1)
            cuts = np.searchsorted(part_of, np.arange(n_parts + 1))
            for p in np.unique(part_of):
                while part < p:  # parts are filled in time order
                    current.commit()
                    part += 1
                    current = writing.AtomicFile(paths[part], config.gzip_level)
                rows = slice(int(cuts[p]), int(cuts[p + 1]))
                cols = task_usage_columns(
                    workload,
                    meta,
                    attempt[rows],
                    start[rows],
                    end[rows],
                    {k: v[rows] for k, v in values.items()},
                )
                current.write_columns(cols)
                total += rows.stop - rows.start
        current.commit()
        for empty_part in range(part + 1, n_parts):  # empty trailing parts
            current = writing.AtomicFile(paths[empty_part], config.gzip_level)
            current.commit()
    except BaseException:
        current.abort()
        raise
    _remove_stale_parts(table_dir, {p.name for p in paths})
    return paths, total


def _truth_table(workload: Workload, meta: _Meta, times: _Times) -> bytes:
    t = workload.tasks
    last = t.first_attempt + t.n_attempts - 1
    first_schedule = times.attempt_start[t.first_attempt]
    end = times.attempt_end[last]
    latency = np.where(t.killed, np.nan, (end - first_schedule) / _US)
    names = [
        "|".join(name for bit, name in MECHANISM_NAMES.items() if m & bit) or "none"
        for m in range(256)
    ]
    kind_names = ["eligible", "small", "nonproduction"]
    columns = {
        "job_id": writing.column(meta.job_id[t.job]),
        "task_index": writing.column(t.index),
        "job_kind": writing.strings(workload.jobs.kind[t.job], kind_names),
        "heavy_tail_job": writing.column(workload.jobs.heavy_tail[t.job].astype(np.int64)),
        "killed": writing.column(t.killed.astype(np.int64)),
        "first_schedule_us": writing.column(first_schedule),
        "end_us": writing.column(end),
        "latency_s": writing.column(np.round(latency, 6), np.isnan(latency)),
        "n_evictions": writing.column(t.n_evictions),
        "n_failures": writing.column(t.n_failures),
        "mechanisms": writing.strings(t.mechanisms, names),
        # run time the task would have had on a healthy machine without any mechanism
        "nominal_s": writing.column(round_significant(t.nominal_work)),
    }
    header = (",".join(columns) + "\n").encode()
    return header + writing.csv_bytes(columns)


def generate_google(
    out_dir: str | Path, config: GoogleGeneratorConfig | Mapping[str, Any] | None = None
) -> dict:
    """Write a synthetic Google 2011 trace under `out_dir`; returns a summary.

    Same config (seed included) gives byte-identical files.
    """
    config = GoogleGeneratorConfig.coerce(config)
    out_dir = Path(out_dir)
    began = time.perf_counter()
    streams = np.random.SeedSequence(config.seed).spawn(4)
    rng_kinds, rng_latent, rng_meta, rng_times = (np.random.default_rng(s) for s in streams)
    kinds = job_kinds(
        config.n_jobs,
        {
            JOB_SMALL: int(round(config.small_job_fraction * config.n_jobs)),
            JOB_NONPRODUCTION: int(round(config.nonproduction_job_fraction * config.n_jobs)),
        },
        rng_kinds,
    )
    workload = sample_workload(config, kinds, rng_latent)
    meta = _sample_meta(config, workload, rng_meta)
    times = _absolute_times(workload, meta, rng_times)
    task_events = build_task_events(workload, meta, times)
    job_events = build_job_events(workload, meta, times, rng_times)
    all_times = np.sort(np.concatenate([task_events["timestamp"], job_events["timestamp"]]))
    boundaries = part_boundaries(all_times, config.n_parts)

    files: list[Path] = []
    rows: dict[str, int] = {}
    paths, rows["job_events"] = _write_split_table(
        out_dir / "job_events",
        job_events["timestamp"],
        boundaries,
        lambda r: job_events_columns(job_events, meta, r),
        config.gzip_level,
    )
    files += paths
    paths, rows["task_events"] = _write_split_table(
        out_dir / "task_events",
        task_events["timestamp"],
        boundaries,
        lambda r: task_events_columns(task_events, meta, r),
        config.gzip_level,
    )
    files += paths
    paths, rows["task_usage"] = _write_task_usage(
        out_dir, workload, meta, times, config, boundaries
    )
    files += paths
    # its own stream (the fifth child): adding the table left the other tables unchanged
    rng_machines = np.random.default_rng(np.random.SeedSequence(config.seed).spawn(5)[4])
    machine_events = build_machine_events(meta, int(task_events["timestamp"].max()), rng_machines)
    path = out_dir / GOOGLE_MACHINE_EVENTS_PART
    writing.write_atomic(path, writing.csv_bytes(machine_events), config.gzip_level)
    files.append(path)
    rows["machine_events"] = len(machine_events["timestamp"])
    if config.write_truth:
        truth = out_dir / "generator_truth.csv.gz"
        writing.write_atomic(truth, _truth_table(workload, meta, times), config.gzip_level)
        files.append(truth)

    jobs, tasks = workload.jobs, workload.tasks
    summary = {
        "trace": "google-2011",
        "files": sorted(str(p.relative_to(out_dir)) for p in files),
        "rows": rows,
        "jobs": int(len(jobs.kind)),
        "eligible_jobs": int((jobs.kind == JOB_ELIGIBLE).sum()),
        "small_jobs": int((jobs.kind == JOB_SMALL).sum()),
        "nonproduction_jobs": int((jobs.kind == JOB_NONPRODUCTION).sum()),
        "heavy_tail_jobs": int(jobs.heavy_tail.sum()),
        "tasks": int(len(tasks.job)),
        "killed_tasks": int(tasks.killed.sum()),
        "attempts": int(len(workload.attempts.task)),
        "part_boundaries_us": [int(b) for b in boundaries],
        "signature_channels": list(CHANNELS),
    }
    manifest = {"config": config.to_dict(), "summary": summary}
    writing.write_atomic(
        out_dir / "generator.json", (json.dumps(manifest, indent=2) + "\n").encode()
    )
    summary["files"].append("generator.json")
    summary["out_dir"] = str(out_dir)
    summary["seconds"] = round(time.perf_counter() - began, 3)
    return summary
