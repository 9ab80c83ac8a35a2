"""Synthetic Alibaba cluster-trace-v2018 tables in the raw format: headerless
`batch_instance.csv` (columns `ALIBABA_2018_BATCH_INSTANCE`), and beside it `machine_meta.csv`
and `machine_usage.csv`. The latent model's jobs (`stragglers.traces.generate.latent`) become
Alibaba tasks and its tasks instances; Alibaba jobs chain one to three tasks as a DAG, evicted
or failed runs leave `Failed` rows, and running, waiting and too-small tasks are there to be
filtered (docs/generator.md, "Output formats").
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stragglers.formats.raw import (
    ALIBABA_2018_BATCH_INSTANCE,
    ALIBABA_2018_MACHINE_META,
    ALIBABA_2018_MACHINE_USAGE,
    EventType,
)
from stragglers.traces.generate import writing
from stragglers.traces.generate.latent import (
    CH_DISK,
    CH_MEMORY,
    CHANNELS,
    JOB_ELIGIBLE,
    JOB_SMALL,
    MECHANISM_NAMES,
    Workload,
    WorkloadConfig,
    job_kinds,
    rank_within_groups,
    round_significant,
    sample_workload,
    signature_of,
)

STATUS_NAMES = ["Terminated", "Failed", "Running", "Waiting"]
TERMINATED, FAILED, RUNNING, WAITING = range(4)
_MAX_CHAIN = 3  # tasks per Alibaba job


@dataclass(frozen=True)
class AlibabaGeneratorConfig(WorkloadConfig):
    """Knobs of the synthetic Alibaba 2018 trace (shared knobs: `WorkloadConfig`)."""

    job_interarrival_s: float = 120.0
    median_task_duration_s: float = 600.0
    n_machines: int = 4000
    unfinished_instance_fraction: float = 0.01  # extra Running/Waiting instances per task
    single_task_job_fraction: float = 0.5  # Alibaba jobs made of one task (else 2-3, chained)
    gzip: bool = False  # write batch_instance.csv.gz instead of batch_instance.csv
    gzip_level: int = 1
    write_truth: bool = True  # also write generator_truth.csv.gz (per-instance ground truth)
    # machine_usage: one sample per machine every this many seconds (the real trace: ~10 s)
    machine_usage_interval_s: float = 60.0
    # CPU utilisation points a machine's overload (the latent slow-machine cause) adds, per
    # unit of its signature: an overloaded machine is busy with work the trace does not show
    machine_usage_overload_points: float = 20.0

    _RULES = {**WorkloadConfig._RULES, "gzip_level": (0, 9)}
    _FRACTIONS = WorkloadConfig._FRACTIONS + (
        "unfinished_instance_fraction",
        "single_task_job_fraction",
    )


# Instance usage in log space: median across tasks, spread across tasks, instance-to-instance
# sd, run-to-run sd, log-multiplier per unit of each channel (cpu_interference, memory,
# disk, data). cpu_avg in 1/100 cores, mem_avg in % of a machine's memory.
_BASE_FEATURES = {
    "cpu_avg": (90.0, 0.6, 0.08, 0.08, (-0.7, -0.1, -0.5, 0.1)),
    "mem_avg": (0.8, 0.8, 0.05, 0.05, (0.0, 0.8, 0.1, 0.4)),
}
# max/avg ratios >= 1: base, median ratio, spread across tasks, run-to-run sd, channels
_DERIVED_FEATURES = {
    "cpu_max": ("cpu_avg", 1.6, 0.3, 0.15, (0.4, 0.0, 0.0, 0.2)),
    "mem_max": ("mem_avg", 1.15, 0.1, 0.05, (0.0, 0.3, 0.0, 0.0)),
}
_LIMITS = {"cpu_avg": 9600.0, "cpu_max": 9600.0, "mem_avg": 100.0, "mem_max": 100.0}
_RESOLUTION = 0.01  # values are written with two decimals
_TRACE_ORIGIN_S = 0.0


def _group_units(n_units: int, single_fraction: float, rng: np.random.Generator):
    """Alibaba job of each unit and its position in the job's chain."""
    multi = (1.0 - single_fraction) / 2
    sizes = rng.choice([1, 2, 3], size=n_units, p=[single_fraction, multi, multi])
    owner = np.repeat(np.arange(n_units), sizes)[:n_units]
    _, counts = np.unique(owner, return_counts=True)
    position = rank_within_groups(counts)
    return np.repeat(np.arange(len(counts)), counts), position, counts


def _task_names(
    position: np.ndarray, chain_length: np.ndarray, rng: np.random.Generator
) -> list[str]:
    """DAG task names: M1, R2_1, J3_2 ...; some one-task jobs get an independent task name."""
    names = []
    letters = rng.choice(["M", "R", "J"], len(position))
    independent = rng.random(len(position)) < 0.5
    for k, (pos, length) in enumerate(zip(position, chain_length)):
        if length == 1 and independent[k]:
            token = base64.b64encode(str(-int(rng.integers(1, 2**62))).encode()).decode()
            names.append(f"task_{token}")
        elif pos == 0:
            names.append(f"{letters[k] if length > 1 else 'M'}1")
        else:
            names.append(f"{letters[k]}{pos + 1}_{pos}")
    return names


def _unit_start_times(
    workload: Workload,
    group: np.ndarray,
    position: np.ndarray,
    rng: np.random.Generator,
    interarrival_s: float,
) -> np.ndarray:
    """Seconds on the trace clock when each unit (Alibaba task) is submitted."""
    tasks = workload.tasks
    n_units = len(group)
    makespan = np.zeros(n_units)
    np.maximum.at(makespan, tasks.job, tasks.end)
    n_groups = int(group.max()) + 1
    group_start = _TRACE_ORIGIN_S + np.cumsum(rng.exponential(interarrival_s, n_groups))
    start = np.zeros(n_units)
    previous_end = group_start.copy()
    gaps = rng.exponential(10.0, n_units)
    for pos in range(_MAX_CHAIN):
        at = np.flatnonzero(position == pos)
        start[at] = previous_end[group[at]] + (gaps[at] if pos > 0 else 0.0)
        previous_end[group[at]] = start[at] + makespan[at]
    return start


def instance_features(
    workload: Workload,
    attempts: np.ndarray,
    levels: dict[str, np.ndarray],
    config: AlibabaGeneratorConfig,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """cpu_avg, cpu_max, mem_avg, mem_max of runs (lifetime aggregates of the signatures)."""
    a, t = workload.attempts, workload.tasks
    task = a.task[attempts]
    unit = t.job[task]
    duration = np.maximum(a.end[attempts] - a.start[attempts], 1e-9)
    after_onset = a.end[attempts] - np.maximum(a.onset[attempts], a.start[attempts])
    active = np.clip(after_onset / duration, 0, 1)
    channel = a.signature[attempts].copy()
    channel[:, CH_MEMORY] *= active
    channel[:, CH_DISK] *= active
    noise = rng.standard_normal((len(attempts), 4))
    values: dict[str, np.ndarray] = {}
    log_base = {}
    for k, (name, (_, _, _, run_sd, betas)) in enumerate(_BASE_FEATURES.items()):
        log_value = (
            levels[name][unit]
            + levels[f"{name}_task"][task]
            + channel @ np.asarray(betas)
            + run_sd * config.feature_noise * noise[:, k]
        )
        log_base[name] = log_value
        values[name] = np.exp(log_value)
    for k, (name, (base, _, _, run_sd, betas)) in enumerate(_DERIVED_FEATURES.items()):
        log_ratio = (
            levels[name][unit]
            + channel @ np.asarray(betas)
            + run_sd * config.feature_noise * noise[:, 2 + k]
        )
        values[name] = np.exp(log_base[base] + np.maximum(log_ratio, 0.0))
    for name, v in values.items():
        values[name] = np.clip(np.round(v, 2), _RESOLUTION, _LIMITS[name])
    # rounding may not break max >= avg
    values["cpu_max"] = np.maximum(values["cpu_max"], values["cpu_avg"])
    values["mem_max"] = np.maximum(values["mem_max"], values["mem_avg"])
    return values


def _levels(workload: Workload, config: AlibabaGeneratorConfig, rng: np.random.Generator):
    n_units, n_tasks = len(workload.jobs.kind), len(workload.tasks.job)
    levels = {}
    for name, (median, spread, task_sd, _, _) in _BASE_FEATURES.items():
        levels[name] = np.log(median) + spread * rng.normal(size=n_units)
        levels[f"{name}_task"] = task_sd * config.feature_noise * rng.normal(size=n_tasks)
    for name, (_, ratio, spread, _, _) in _DERIVED_FEATURES.items():
        levels[name] = np.maximum(np.log(ratio) + spread * rng.normal(size=n_units), 0.0)
    return levels


def _format_decimals(values: np.ndarray) -> np.ndarray:
    """Two decimals, as the exact nearest doubles (so shortest-repr printing shows them)."""
    return np.round(values * 100.0) / 100.0


def generate_alibaba(
    out_dir: str | Path, config: AlibabaGeneratorConfig | Mapping[str, Any] | None = None
) -> dict:
    """Write a synthetic Alibaba 2018 `batch_instance.csv` under `out_dir`; returns a summary.

    Same config (seed included) gives byte-identical files.
    """
    config = AlibabaGeneratorConfig.coerce(config)
    out_dir = Path(out_dir)
    began = time.perf_counter()
    streams = np.random.SeedSequence(config.seed).spawn(5)
    rng_kinds, rng_latent, rng_meta, rng_features, rng_extra = (
        np.random.default_rng(s) for s in streams
    )
    kinds = job_kinds(
        config.n_jobs, {JOB_SMALL: int(round(config.small_job_fraction * config.n_jobs))}, rng_kinds
    )
    workload = sample_workload(config, kinds, rng_latent)
    jobs, tasks, attempts = workload.jobs, workload.tasks, workload.attempts
    n_units = len(kinds)

    group, position, chain_counts = _group_units(n_units, config.single_task_job_fraction, rng_meta)
    chain_length = chain_counts[group]
    task_names = _task_names(position, chain_length, rng_meta)
    job_number = np.cumsum(rng_meta.integers(1, 40, int(group.max()) + 1))
    job_names = [f"j_{n}" for n in job_number]
    task_type = rng_meta.integers(1, 13, n_units)
    unit_start = _unit_start_times(workload, group, position, rng_meta, config.job_interarrival_s)
    instance_number = 1_000_000 + np.cumsum(rng_meta.integers(1, 20, len(tasks.job)))
    levels = _levels(workload, config, rng_features)

    # one row per run (attempt)
    att = np.arange(len(attempts.task))
    unit_of_attempt = tasks.job[attempts.task]
    start_s = np.floor(unit_start[unit_of_attempt] + attempts.start).astype(np.int64)
    end_s = np.floor(unit_start[unit_of_attempt] + attempts.end).astype(np.int64)
    end_s = np.maximum(end_s, start_s + 1)
    status = np.where(attempts.end_event == int(EventType.FINISH), TERMINATED, FAILED)
    values = instance_features(workload, att, levels, config, rng_features)

    # Running / Waiting instances of eligible tasks, to be filtered out downstream
    extra_per_unit = rng_extra.binomial(jobs.n_tasks, config.unfinished_instance_fraction)
    extra_per_unit[kinds != JOB_ELIGIBLE] = 0
    extra_unit = np.repeat(np.arange(n_units), extra_per_unit)
    n_extra = len(extra_unit)
    extra_status = np.where(rng_extra.random(n_extra) < 0.5, RUNNING, WAITING)
    makespan = np.zeros(n_units)
    np.maximum.at(makespan, tasks.job, tasks.end)
    extra_offset = rng_extra.uniform(0, 1, n_extra) * makespan[extra_unit]
    extra_start = np.floor(unit_start[extra_unit] + extra_offset).astype(np.int64)
    extra_machine = rng_extra.integers(0, config.n_machines, n_extra)
    extra_instance = instance_number[-1] + 1 + np.arange(n_extra) * 3

    n_runs = len(att)
    unit = np.concatenate([unit_of_attempt, extra_unit])
    instance = np.concatenate([instance_number[attempts.task], extra_instance])
    statuses = np.concatenate([status, extra_status])
    start_all = np.concatenate([start_s, extra_start])
    start_missing = np.concatenate([np.zeros(n_runs, bool), extra_status == WAITING])
    end_all = np.concatenate([end_s, np.zeros(n_extra, np.int64)])
    end_missing = np.concatenate([np.zeros(n_runs, bool), np.ones(n_extra, bool)])
    machine = np.concatenate([attempts.machine, extra_machine])
    machine_missing = start_missing
    seq_no = np.concatenate([attempts.number + 1, np.ones(n_extra, np.int64)])
    total_seq = np.concatenate([tasks.n_attempts[attempts.task], np.ones(n_extra, np.int64)])
    usage_missing = np.concatenate([np.zeros(n_runs, bool), np.ones(n_extra, bool)])

    sort_time = np.where(start_missing, np.iinfo(np.int64).max, start_all)
    order = np.lexsort((seq_no, instance, sort_time))
    machine_names = [f"m_{k + 1}" for k in range(config.n_machines)]
    instance_names_all = np.char.add("ins_", instance[order].astype(str))

    def pick(v):
        return v[order]

    columns = {
        "instance_name": writing.column(instance_names_all.astype(object)),
        "task_name": writing.strings(pick(unit), task_names),
        "job_name": writing.strings(group[pick(unit)], job_names),
        "task_type": writing.column(task_type[pick(unit)]),
        "status": writing.strings(pick(statuses), STATUS_NAMES),
        "start_time": writing.column(pick(start_all), pick(start_missing)),
        "end_time": writing.column(pick(end_all), pick(end_missing)),
        "machine_id": writing.column(
            np.array(machine_names, dtype=object)[pick(machine)], pick(machine_missing)
        ),
        "seq_no": writing.column(pick(seq_no)),
        "total_seq_no": writing.column(pick(total_seq)),
    }
    for name in ("cpu_avg", "cpu_max", "mem_avg", "mem_max"):
        v = np.concatenate([_format_decimals(values[name]), np.zeros(n_extra)])
        columns[name] = writing.column(pick(v), pick(usage_missing))
    assert list(columns) == ALIBABA_2018_BATCH_INSTANCE

    name = "batch_instance.csv.gz" if config.gzip else "batch_instance.csv"
    stale = out_dir / ("batch_instance.csv" if config.gzip else "batch_instance.csv.gz")
    path = out_dir / name
    with writing.AtomicFile(path, config.gzip_level if config.gzip else None) as f:
        f.write_columns(columns)
    stale.unlink(missing_ok=True)  # an earlier run's other variant would be read too
    files = [path]
    # machine tables from their own stream (the sixth child): the other tables are unchanged
    rng_machines = np.random.default_rng(np.random.SeedSequence(config.seed).spawn(6)[5])
    run_values = {name: values[name] for name in ("cpu_avg", "mem_avg")}
    files += _write_machine_tables(
        out_dir,
        config,
        workload,
        attempts.machine[att],
        start_s,
        end_s,
        run_values,
        extra_machine,
        extra_start,
        extra_status == RUNNING,
        rng_machines,
    )

    if config.write_truth:
        truth = out_dir / "generator_truth.csv.gz"
        writing.write_atomic(
            truth,
            _truth_table(workload, unit_start, instance_number, task_names, job_names, group),
            config.gzip_level,
        )
        files.append(truth)

    summary = {
        "trace": "alibaba-2018",
        "files": sorted(str(p.relative_to(out_dir)) for p in files),
        "rows": {"batch_instance": int(len(order))},
        "status_rows": {s: int((statuses == k).sum()) for k, s in enumerate(STATUS_NAMES)},
        "alibaba_jobs": int(group.max()) + 1,
        "tasks": n_units,
        "eligible_tasks": int((kinds == JOB_ELIGIBLE).sum()),
        "small_tasks": int((kinds == JOB_SMALL).sum()),
        "heavy_tail_tasks": int(jobs.heavy_tail.sum()),
        "instances": int(len(tasks.job) + n_extra),
        "terminated_instances": int((status == TERMINATED).sum()),
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


_MACHINE_CPU_NUM = 96  # every machine of the 2018 trace has 96 cores
_MACHINE_MEM_SIZE = 100  # memory normalised to 100


def _running_sums(machine, start, end, weights, query_machine, query_time) -> np.ndarray:
    """(n_queries, k) sums of `weights` of the runs with start <= t < end on the machine."""
    shift = 40  # seconds < 2**40
    start_keys = (machine.astype(np.int64) << shift) + start.astype(np.int64)
    end_keys = (machine.astype(np.int64) << shift) + end.astype(np.int64)
    queries = (query_machine.astype(np.int64) << shift) + query_time.astype(np.int64)
    out = np.zeros((len(queries), weights.shape[1]))
    for keys, sign in ((start_keys, 1.0), (end_keys, -1.0)):
        order = np.argsort(keys, kind="stable")
        prefix = np.vstack([np.zeros((1, weights.shape[1])), np.cumsum(weights[order], axis=0)])
        out += sign * prefix[np.searchsorted(keys[order], queries, side="right")]
    return out


def _write_machine_tables(
    out_dir,
    config,
    workload,
    run_machine,
    run_start,
    run_end,
    run_values,
    extra_machine,
    extra_start,
    extra_running,
    rng,
) -> list[Path]:
    """machine_meta (every machine, one row at time 0: 96 cores, memory 100, USING) and
    machine_usage (every machine that ran something, a sample every
    `machine_usage_interval_s` over the trace): CPU and memory utilisation are the sums of
    the running instances' cpu_avg / mem_avg (CPU over the machine's cores) plus the
    machine's overload and noise; disk I/O is noise around a base; mem_gps and mkpi empty."""
    n = len(workload.machines.overload)
    names = np.array([f"m_{k + 1}" for k in range(n)], dtype=object)
    meta = {
        "machine_id": writing.column(names),
        "time_stamp": writing.column(np.zeros(n, dtype=np.int64)),
        "failure_domain_1": writing.column(rng.integers(0, 20, n)),
        "failure_domain_2": writing.column(
            np.char.add("fd_", rng.integers(0, 500, n).astype(str)).astype(object)
        ),
        "cpu_num": writing.column(np.full(n, _MACHINE_CPU_NUM)),
        "mem_size": writing.column(np.full(n, _MACHINE_MEM_SIZE)),
        "status": writing.column(np.full(n, "USING", dtype=object)),
    }
    assert list(meta) == ALIBABA_2018_MACHINE_META
    # Running instances (no end) run past the last sample
    horizon = int(max(run_end.max(initial=0), extra_start.max(initial=0))) + 1
    machine = np.concatenate([run_machine, extra_machine[extra_running]])
    start = np.concatenate([run_start, extra_start[extra_running]])
    end = np.concatenate([run_end, np.full(int(extra_running.sum()), horizon + 1)])
    weights = np.column_stack(
        [
            np.concatenate([run_values["cpu_avg"], np.zeros(int(extra_running.sum()))]),
            np.concatenate([run_values["mem_avg"], np.zeros(int(extra_running.sum()))]),
        ]
    )
    used = np.unique(machine)
    step = float(config.machine_usage_interval_s)
    times = np.arange(0, horizon + step, step).astype(np.int64)
    sample_machine = np.repeat(used, len(times))
    sample_time = np.tile(times, len(used))
    sums = _running_sums(machine, start, end, weights, sample_machine, sample_time)
    overload = (
        config.machine_usage_overload_points
        * signature_of(workload.machines.overload)[sample_machine]
    )
    noise = rng.normal(0.0, 2.0, (len(sample_machine), 3))
    cpu = np.clip(sums[:, 0] / _MACHINE_CPU_NUM + overload + 5.0 + noise[:, 0], 0, 100)
    mem = np.clip(sums[:, 1] + 20.0 + noise[:, 1], 0, 100)
    disk = np.clip(3.0 + np.abs(noise[:, 2]), 0, 100)
    missing = np.ones(len(sample_machine), dtype=bool)
    usage = {
        "machine_id": writing.column(names[sample_machine]),
        "time_stamp": writing.column(sample_time),
        "cpu_util_percent": writing.column(np.round(cpu).astype(np.int64)),
        "mem_util_percent": writing.column(np.round(mem).astype(np.int64)),
        "mem_gps": writing.column(np.zeros(len(sample_machine)), missing),
        "mkpi": writing.column(np.zeros(len(sample_machine), dtype=np.int64), missing),
        "net_in": writing.column(np.round(rng.uniform(20, 60, len(sample_machine)), 2)),
        "net_out": writing.column(np.round(rng.uniform(20, 60, len(sample_machine)), 2)),
        "disk_io_percent": writing.column(np.round(disk).astype(np.int64)),
    }
    assert list(usage) == ALIBABA_2018_MACHINE_USAGE
    paths = []
    for table, columns in (("machine_meta", meta), ("machine_usage", usage)):
        name = f"{table}.csv.gz" if config.gzip else f"{table}.csv"
        stale = out_dir / (f"{table}.csv" if config.gzip else f"{table}.csv.gz")
        path = out_dir / name
        with writing.AtomicFile(path, config.gzip_level if config.gzip else None) as f:
            f.write_columns(columns)
        stale.unlink(missing_ok=True)
        paths.append(path)
    return paths


def _truth_table(workload, unit_start, instance_number, task_names, job_names, group) -> bytes:
    t, a = workload.tasks, workload.attempts
    last = t.first_attempt + t.n_attempts - 1
    first_start = np.floor(unit_start[t.job] + a.start[t.first_attempt]).astype(np.int64)
    end = np.maximum(np.floor(unit_start[t.job] + a.end[last]).astype(np.int64), first_start + 1)
    latency = np.where(t.killed, np.nan, (end - first_start).astype(float))
    mech_names = [
        "|".join(n for bit, n in MECHANISM_NAMES.items() if m & bit) or "none" for m in range(256)
    ]
    columns = {
        "instance_name": writing.column(
            np.char.add("ins_", instance_number.astype(str)).astype(object)
        ),
        "task_name": writing.strings(t.job, task_names),
        "job_name": writing.strings(group[t.job], job_names),
        "task_kind": writing.strings(
            workload.jobs.kind[t.job], ["eligible", "small", "nonproduction"]
        ),
        "heavy_tail_task": writing.column(workload.jobs.heavy_tail[t.job].astype(np.int64)),
        "killed": writing.column(t.killed.astype(np.int64)),
        "first_start_s": writing.column(first_start),
        "end_s": writing.column(end),
        "latency_s": writing.column(latency, np.isnan(latency)),
        "n_runs": writing.column(t.n_attempts),
        "mechanisms": writing.strings(t.mechanisms, mech_names),
        "nominal_s": writing.column(round_significant(t.nominal_work)),
    }
    header = (",".join(columns) + "\n").encode()
    return header + writing.csv_bytes(columns)
