"""The state of a machine over time, from the Google trace's task_events and machine_events:
a `MachineTimeline` built from every task event of every job and priority answers "what was
machine m like at time t?" (running attempts, their requests, evictions and failures so far,
capacity) for millions of (m, t) queries at once, each a binary search on sorted (machine,
time) keys. Wrangler and START read it, since a task's own counters say little about its node.
The columns and their rules: docs/definitions.md ("Machine state").
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd

from stragglers.formats import jobs as jobdata
from stragglers.formats import raw as schema

TIME_BITS = 42  # trace timestamps in µs stay below 2**42 (50 days)
MAX_MACHINE_CODES = 1 << (63 - TIME_BITS)

MACHINE_STATE_COLUMNS = (
    "machine_running_tasks",
    "machine_cpu_requested",
    "machine_memory_requested",
    "machine_evictions_so_far",
    "machine_failures_so_far",
    "machine_cpu_capacity",
    "machine_memory_capacity",
)

TERMINAL_EVENTS = (
    schema.EventType.EVICT,
    schema.EventType.FAIL,
    schema.EventType.FINISH,
    schema.EventType.KILL,
    schema.EventType.LOST,
)


def launch_columns(columns=MACHINE_STATE_COLUMNS) -> list[str]:
    return jobdata.launch_columns(columns)


def composite_key(code: np.ndarray, time_us: np.ndarray) -> np.ndarray:
    """One sortable int64 per (machine or task code, µs time)."""
    return (np.asarray(code).astype(np.int64) << TIME_BITS) + np.asarray(time_us).astype(np.int64)


_keys = composite_key


def last_value_at(
    keys: np.ndarray, values: np.ndarray, code: np.ndarray, time_us: np.ndarray
) -> np.ndarray:
    """The row of `values` (sorted `keys` = composite_key(code, time)) of each code's latest
    key at or before its time; NaN where the code has none by then."""
    at = composite_key(code, time_us)
    last = np.searchsorted(keys, at, side="right") - 1
    first_of_code = np.searchsorted(keys, composite_key(code, np.full(len(at), -1)), side="right")
    valid = (last >= 0) & (last >= first_of_code)
    return np.where(valid[:, None], values[np.maximum(last, 0)], np.nan)


def attempt_intervals(events: pd.DataFrame, horizon_us: int) -> pd.DataFrame:
    """(machine, start, end, cpu_request, memory_request) of every attempt with a machine.

    `events` sorted by (job, task, timestamp); an attempt is a SCHEDULE until the task's next
    terminal event (EVICT, FAIL, FINISH, KILL, LOST); attempts still open when the parts end
    run to `horizon_us`. Requests are NaN when the columns are absent or the field is empty."""
    n = len(events)
    if n == 0:
        return pd.DataFrame(
            {
                c: np.array([], dtype=float)
                for c in ("machine_id", "start", "end", "cpu_request", "memory_request")
            }
        )
    kind = events["event_type"].to_numpy()
    job, task = events["job_id"].to_numpy(), events["task_index"].to_numpy()
    task_change = np.r_[True, (np.diff(job) != 0) | (np.diff(task) != 0)]
    group = np.cumsum(task_change) - 1
    # index of the next terminal event at or after each row (n if none), by a reverse scan
    candidate = np.where(np.isin(kind, TERMINAL_EVENTS), np.arange(n), n)
    next_terminal = np.minimum.accumulate(candidate[::-1])[::-1]
    schedule_rows = np.flatnonzero(kind == schema.EventType.SCHEDULE)
    end_row = np.where(
        schedule_rows + 1 < n, next_terminal[np.minimum(schedule_rows + 1, n - 1)], n
    )
    times = events["timestamp"].to_numpy()
    closed = (end_row < n) & (group[np.minimum(end_row, n - 1)] == group[schedule_rows])
    end = np.where(closed, times[np.minimum(end_row, n - 1)], horizon_us)
    machine = events["machine_id"].to_numpy(dtype=float)[schedule_rows]
    keep = ~np.isnan(machine)

    def request(column: str) -> np.ndarray:
        if column not in events:
            return np.full(keep.sum(), np.nan)
        return events[column].to_numpy(dtype=float)[schedule_rows][keep]

    return pd.DataFrame(
        {
            "machine_id": machine[keep].astype(np.int64),
            "start": times[schedule_rows][keep].astype(np.int64),
            "end": end[keep].astype(np.int64),
            "cpu_request": request("cpu_request"),
            "memory_request": request("memory_request"),
        }
    )


@dataclass
class MachineTimeline:
    """Sorted (machine code, time) keys and prefix sums; see the module docstring."""

    machines: np.ndarray  # sorted unique machine ids (int64); code = position
    start_keys: np.ndarray  # attempts' starts, sorted
    start_prefix: np.ndarray  # (n + 1, 3) prefix sums of [1, cpu, memory] in start_keys order
    end_keys: np.ndarray
    end_prefix: np.ndarray
    eviction_keys: np.ndarray
    failure_keys: np.ndarray
    capacity_keys: np.ndarray  # machine_events rows, sorted (stable: file order at equal time)
    capacity: np.ndarray  # (n_events, 2): cpus, memory; NaN after REMOVE
    has_capacity_table: bool = True

    # -- queries --------------------------------------------------------------------------
    def codes(self, machine: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Machine ids (float, NaN = missing) -> (code, known)."""
        machine = np.asarray(machine, dtype=float)
        present = ~np.isnan(machine)
        ids = np.where(present, machine, -1).astype(np.int64)
        if len(self.machines) == 0:
            return np.zeros(len(ids), dtype=np.int64), np.zeros(len(ids), dtype=bool)
        code = np.minimum(np.searchsorted(self.machines, ids), len(self.machines) - 1)
        return code, present & (self.machines[code] == ids)

    def state(self, machine: np.ndarray, time_us: np.ndarray) -> np.ndarray:
        """(n, 7) machine state at `time_us` (inclusive: events at that instant count),
        columns MACHINE_STATE_COLUMNS; rows of unknown machines are NaN."""
        code, known = self.codes(machine)
        time_us = np.asarray(time_us, dtype=np.int64)
        at = _keys(code, time_us)
        # The same binary searches as one per row, arranged to be cheap (millions of rows per
        # part): a row's lower bound, just before its machine's first key, depends on the
        # machine only, so it is searched once per machine; the upper bounds are searched in
        # key order, where numpy's search starts from the previous answer.
        order = np.argsort(at, kind="stable")
        at_sorted = at[order]
        machine_origin = _keys(np.arange(max(len(self.machines), 1)), -1)

        def upper(keys: np.ndarray) -> np.ndarray:
            bound = np.empty(len(at), dtype=np.int64)
            bound[order] = np.searchsorted(keys, at_sorted, side="right")
            return bound

        def lower(keys: np.ndarray) -> np.ndarray:
            return np.searchsorted(keys, machine_origin, side="right")[code]

        out = np.full((len(code), len(MACHINE_STATE_COLUMNS)), np.nan)

        def window_sum(keys: np.ndarray, prefix: np.ndarray) -> np.ndarray:
            return prefix[upper(keys)] - prefix[lower(keys)]

        running = window_sum(self.start_keys, self.start_prefix) - window_sum(
            self.end_keys, self.end_prefix
        )
        out[:, 0:3] = running
        for column, keys in ((3, self.eviction_keys), (4, self.failure_keys)):
            out[:, column] = upper(keys) - lower(keys)
        if len(self.capacity_keys):
            # last_value_at(self.capacity_keys, self.capacity, code, time_us), searched as above
            last = upper(self.capacity_keys) - 1
            valid = (last >= 0) & (last >= lower(self.capacity_keys))
            out[:, 5:7] = np.where(valid[:, None], self.capacity[np.maximum(last, 0)], np.nan)
        out[~known] = np.nan
        # sums of requests cancel in floating point: tiny negatives and residues are noise
        out[:, 0:3] = np.where(np.abs(out[:, 0:3]) < 1e-9, 0.0, out[:, 0:3])
        return out

    # -- storage --------------------------------------------------------------------------
    def save(self, path: Path | str) -> None:
        np.savez(path, **{f.name: np.asarray(getattr(self, f.name)) for f in fields(self)})

    @classmethod
    def load(cls, path: Path | str) -> MachineTimeline:
        with np.load(path) as stored:
            values = {f.name: stored[f.name] for f in fields(cls)}
        values["has_capacity_table"] = bool(values["has_capacity_table"])
        return cls(**values)


def _prefix(keys: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(keys, kind="stable")
    prefix = np.vstack([np.zeros((1, weights.shape[1])), np.cumsum(weights[order], axis=0)])
    return keys[order], prefix


def build_timeline(
    events: pd.DataFrame,
    machine_events: pd.DataFrame | None,
    horizon_us: int,
    counts: dict[str, int] | None = None,
) -> MachineTimeline:
    """A timeline from task events of every job (sorted by job, task, timestamp; columns
    timestamp, job_id, task_index, machine_id, event_type and, if present, cpu_request and
    memory_request) and machine_events (None: no such table; capacities stay NaN).
    `counts` receives what was left out, for the conversion report."""
    counts = counts if counts is not None else {}
    intervals = attempt_intervals(events, horizon_us)
    point_kind = events["event_type"].to_numpy()
    point_machine = events["machine_id"].to_numpy(dtype=float)
    ids = [
        intervals["machine_id"].to_numpy(),
        point_machine[~np.isnan(point_machine)].astype(np.int64),
    ]
    if machine_events is not None:
        ids.append(machine_events["machine_id"].to_numpy(dtype=np.int64))
    machines = np.unique(np.concatenate(ids)) if ids else np.array([], dtype=np.int64)
    if len(machines) >= MAX_MACHINE_CODES:
        raise ValueError(
            f"{len(machines)} machines: more than the {MAX_MACHINE_CODES} the timeline keys hold"
        )
    timeline = MachineTimeline(
        machines=machines.astype(np.int64),
        start_keys=np.array([], dtype=np.int64),
        start_prefix=np.zeros((1, 3)),
        end_keys=np.array([], dtype=np.int64),
        end_prefix=np.zeros((1, 3)),
        eviction_keys=np.array([], dtype=np.int64),
        failure_keys=np.array([], dtype=np.int64),
        capacity_keys=np.array([], dtype=np.int64),
        capacity=np.zeros((0, 2)),
        has_capacity_table=machine_events is not None,
    )
    code, _ = timeline.codes(intervals["machine_id"].to_numpy(dtype=float))
    requests = intervals[["cpu_request", "memory_request"]].to_numpy(dtype=float)
    counts["attempts_without_request"] = int(np.isnan(requests).any(axis=1).sum())
    weights = np.column_stack([np.ones(len(intervals)), np.nan_to_num(requests, nan=0.0)])
    timeline.start_keys, timeline.start_prefix = _prefix(
        _keys(code, intervals["start"].to_numpy()), weights
    )
    timeline.end_keys, timeline.end_prefix = _prefix(
        _keys(code, intervals["end"].to_numpy()), weights
    )
    counts["schedule_events_without_machine"] = int(
        ((point_kind == schema.EventType.SCHEDULE) & np.isnan(point_machine)).sum()
    )
    for name, event_type in (
        ("eviction_keys", schema.EventType.EVICT),
        ("failure_keys", schema.EventType.FAIL),
    ):
        rows = (point_kind == event_type) & ~np.isnan(point_machine)
        point_code, _ = timeline.codes(point_machine[rows])
        setattr(timeline, name, np.sort(_keys(point_code, events["timestamp"].to_numpy()[rows])))
    if machine_events is not None and len(machine_events):
        capacity_code, _ = timeline.codes(machine_events["machine_id"].to_numpy(dtype=float))
        keys = _keys(capacity_code, machine_events["timestamp"].to_numpy())
        order = np.argsort(keys, kind="stable")
        values = machine_events[["cpus", "memory"]].to_numpy(dtype=float)
        removed = machine_events["event_type"].to_numpy() == schema.MachineEventType.REMOVE
        values[removed] = np.nan
        timeline.capacity_keys, timeline.capacity = keys[order], values[order]
    return timeline


MACHINE_EVENT_TYPES = {
    "timestamp": "int",
    "machine_id": "int",
    "event_type": "int",
    "platform_id": "str",
    "cpus": "float",
    "memory": "float",
}


def read_machine_events(parts: list[Path], report) -> pd.DataFrame | None:
    """The machine_events table (None when there are no parts: capacities stay unknown, and
    the report says so). Rows without timestamp, machine or event type are skipped, counted."""
    from stragglers.traces.rawcsv import iter_csv_chunks

    if not parts:
        report.count("machine_events_table_missing")
        return None
    frames = []
    for part in parts:
        report.files_read.append(str(part))
        for chunk in iter_csv_chunks(
            part,
            schema.GOOGLE_MACHINE_EVENTS,
            MACHINE_EVENT_TYPES,
            usecols=["timestamp", "machine_id", "event_type", "cpus", "memory"],
            skipped=report.skipped_rows,
        ):
            required = ["timestamp", "machine_id", "event_type"]
            missing = chunk[required].isna().any(axis=1)
            report.skipped_rows.add(
                part,
                None,
                "empty timestamp/machine/event type",
                "missing required field",
                n=int(missing.sum()),
            )
            frames.append(chunk[~missing])
    if not frames:
        return pd.DataFrame(
            {
                c: np.array([], dtype=float)
                for c in ("timestamp", "machine_id", "event_type", "cpus", "memory")
            }
        )
    table = pd.concat(frames, ignore_index=True)
    for column in ("timestamp", "machine_id", "event_type"):
        table[column] = table[column].astype(np.int64)
    report.count("machine_event_rows", len(table))
    return table


def first_schedule_machine(
    events: pd.DataFrame, job_id: np.ndarray, task_index: np.ndarray
) -> np.ndarray:
    """Machine (float, NaN if missing) of each task's first SCHEDULE; `events` sorted by
    (job, task, timestamp)."""
    schedules = events[events["event_type"] == schema.EventType.SCHEDULE]
    first = schedules.groupby(["job_id", "task_index"], sort=False)["machine_id"].first()
    index = pd.MultiIndex.from_arrays([job_id, task_index])
    return first.reindex(index).to_numpy(dtype=float)


def launch_state(
    timeline: MachineTimeline, machine: np.ndarray, start_us: np.ndarray
) -> np.ndarray:
    """The machine's state just before each task started (1 µs before its first SCHEDULE):
    what a scheduler placing the task could have read; the task itself is not counted."""
    return timeline.state(machine, np.asarray(start_us, dtype=np.int64) - 1)


# ---------------------------------------------------------------------------------------------
# Alibaba 2018: batch_instance (every instance of every job), machine_usage, machine_meta
# ---------------------------------------------------------------------------------------------
# machine_usage: every counter the table has (CPU, memory, memory bandwidth, cache misses per
# kilo-instruction, network in / out, disk I/O)
ALIBABA_USAGE_COLUMNS = (
    "cpu_util_percent",
    "mem_util_percent",
    "mem_gps",
    "mkpi",
    "net_in",
    "net_out",
    "disk_io_percent",
)
ALIBABA_MACHINE_STATE_COLUMNS = (
    "machine_running_instances",
    "machine_failed_instances_so_far",
    *(f"machine_{column}" for column in ALIBABA_USAGE_COLUMNS),
    "machine_cpu_num",
    "machine_mem_size",
)
_USAGE_SLICE = slice(2, 2 + len(ALIBABA_USAGE_COLUMNS))
_META_SLICE = slice(2 + len(ALIBABA_USAGE_COLUMNS), 4 + len(ALIBABA_USAGE_COLUMNS))


def alibaba_machine_number(names) -> np.ndarray:
    """`m_1234` -> 1234.0; anything else (missing, malformed) -> NaN."""
    text = pd.Series(np.asarray(names, dtype=object)).astype("string")
    digits = text.str.extract(r"^m_(\d+)$", expand=False)
    return pd.to_numeric(digits, errors="coerce").to_numpy(dtype=float)


class _Grid:
    """A (machine, bin) array that grows as machines and bins appear."""

    def __init__(self, dtype, fill, columns: int = 1):
        self.values = np.full((0, 0, columns), fill, dtype=dtype)
        self.fill = fill

    def reserve(self, n_machines: int, n_bins: int, exact: bool = False) -> None:
        """Room for (n_machines, n_bins); grows by doubling unless `exact`."""
        have_m, have_b, columns = self.values.shape
        if n_machines <= have_m and n_bins <= have_b:
            return
        if exact:
            shape = (max(n_machines, have_m), max(n_bins, have_b), columns)
        else:
            shape = (max(n_machines, 2 * have_m), max(n_bins, 2 * have_b), columns)
        grown = np.full(shape, self.fill, dtype=self.values.dtype)
        grown[:have_m, :have_b] = self.values
        self.values = grown


class BinnedMachineState:
    """The Alibaba machine state on a grid of `bin_seconds`, in memory bounded by machines x
    bins (not by rows: the tables are streamed). The state at time t is the state at the last
    grid boundary B <= t:

        machine_running_instances        instances with start < B <= end (no end: running on)
        machine_failed_instances_so_far  Failed instances that ended before B
        machine_*_percent                machine_usage's latest sample before B (NaN if none)
        machine_cpu_num, machine_mem_size  machine_meta's latest row at or before t

    A task starting at t is never counted in its own machine's state (its start is >= B)."""

    def __init__(self, bin_seconds: float):
        if not bin_seconds > 0:
            raise ValueError(f"bin_seconds must be > 0, got {bin_seconds}")
        self.bin_seconds = float(bin_seconds)
        self.running = _Grid(np.int32, 0)
        self.failed = _Grid(np.int32, 0)
        self.usage = _Grid(np.float32, np.nan, len(ALIBABA_USAGE_COLUMNS))
        self.usage_time = _Grid(np.float64, -np.inf)
        self.meta_keys = np.array([], dtype=np.int64)
        self.meta_values = np.zeros((0, 2))
        self.has_usage_table = False
        self.has_meta_table = False
        self.finished = False

    def _boundary_index(self, time_s: np.ndarray) -> np.ndarray:
        """Index of the first boundary after t (t < K * bin)."""
        return (np.floor(np.asarray(time_s, dtype=float) / self.bin_seconds) + 1).astype(np.int64)

    def add_instances(
        self, machine: np.ndarray, start: np.ndarray, end: np.ndarray, failed: np.ndarray
    ) -> None:
        """Instances with a machine number and a start (end NaN: still running)."""
        machine = np.asarray(machine, dtype=np.int64)
        first = self._boundary_index(start)
        has_end = ~np.isnan(end)
        last = self._boundary_index(np.where(has_end, end, 0.0))
        n_bins = int(max(first.max(initial=0), last[has_end].max(initial=0))) + 1
        self.running.reserve(int(machine.max(initial=-1)) + 1, n_bins)
        self.failed.reserve(int(machine.max(initial=-1)) + 1, n_bins)
        np.add.at(self.running.values[:, :, 0], (machine, first), 1)
        np.add.at(self.running.values[:, :, 0], (machine[has_end], last[has_end]), -1)
        ended_failed = has_end & np.asarray(failed, dtype=bool)
        np.add.at(self.failed.values[:, :, 0], (machine[ended_failed], last[ended_failed]), 1)

    def add_usage(self, machine: np.ndarray, time_s: np.ndarray, values: np.ndarray) -> None:
        """machine_usage samples: each (machine, bin) keeps its latest sample."""
        self.has_usage_table = True
        machine = np.asarray(machine, dtype=np.int64)
        cell = self._boundary_index(time_s) - 1  # the bin holding the sample
        self.usage.reserve(int(machine.max(initial=-1)) + 1, int(cell.max(initial=0)) + 1)
        self.usage_time.reserve(*self.usage.values.shape[:2])
        order = np.argsort(time_s, kind="stable")  # the last write of a cell is its latest
        machine, cell, time_s, values = (
            machine[order],
            cell[order],
            np.asarray(time_s)[order],
            values[order],
        )
        later = time_s >= self.usage_time.values[machine, cell, 0]
        self.usage.values[machine[later], cell[later]] = values[later]
        self.usage_time.values[machine[later], cell[later], 0] = time_s[later]

    def set_meta(self, machine: np.ndarray, time_s: np.ndarray, values: np.ndarray) -> None:
        """machine_meta rows (small: a few per machine), all at once."""
        self.has_meta_table = True
        keys = _keys(
            np.asarray(machine, dtype=np.int64), np.round(np.asarray(time_s, dtype=float) * 1e6)
        )
        order = np.argsort(keys, kind="stable")
        self.meta_keys, self.meta_values = keys[order], np.asarray(values, dtype=float)[order]

    def finish(self) -> None:
        """Running sums along the bins; usage carried forward to later bins."""
        grids = (self.running, self.failed, self.usage, self.usage_time)
        n_machines = max(grid.values.shape[0] for grid in grids)
        n_bins = max(grid.values.shape[1] for grid in grids)
        for grid in grids:
            grid.reserve(n_machines, n_bins, exact=True)
        self.running.values = np.cumsum(self.running.values, axis=1, dtype=np.int32)
        self.failed.values = np.cumsum(self.failed.values, axis=1, dtype=np.int32)
        # forward fill: each cell takes the latest earlier cell with a sample
        seen = np.isfinite(self.usage_time.values[:, :, 0])
        index = np.where(seen, np.arange(seen.shape[1])[None, :], 0)
        np.maximum.accumulate(index, axis=1, out=index)
        filled = np.take_along_axis(self.usage.values, index[:, :, None], axis=1)
        any_before = np.maximum.accumulate(seen, axis=1)
        self.usage.values = np.where(any_before[:, :, None], filled, np.nan).astype(np.float32)
        self.finished = True

    def state(self, machine: np.ndarray, time_s: np.ndarray) -> np.ndarray:
        """(n, 11) ALIBABA_MACHINE_STATE_COLUMNS at `time_s`; unknown machine (NaN): NaN."""
        if not self.finished:
            raise RuntimeError("BinnedMachineState.state before finish()")
        machine = np.asarray(machine, dtype=float)
        time_s = np.asarray(time_s, dtype=float)
        out = np.full((len(machine), len(ALIBABA_MACHINE_STATE_COLUMNS)), np.nan)
        n_machines, n_bins = self.running.values.shape[:2]
        known = ~np.isnan(machine) & (machine >= 0) & (machine < max(n_machines, 1))
        m = np.where(known, machine, 0).astype(np.int64)
        boundary = self._boundary_index(time_s) - 1  # B = boundary * bin <= t
        if n_bins:
            column = np.clip(boundary, 0, n_bins - 1)
            out[:, 0] = self.running.values[m, column, 0] if n_machines else 0
            out[:, 1] = self.failed.values[m, column, 0] if n_machines else 0
            previous = boundary - 1  # the bin before B holds the latest sample before B
            usage = self.usage.values[m, np.clip(previous, 0, n_bins - 1)] if n_machines else np.nan
            out[:, _USAGE_SLICE] = np.where((previous >= 0)[:, None], usage, np.nan)
        else:
            out[:, 0:2] = 0
        if len(self.meta_keys):
            out[:, _META_SLICE] = last_value_at(
                self.meta_keys, self.meta_values, m, np.round(time_s * 1e6)
            )
        out[~known] = np.nan
        return out

    def save(self, path: Path | str) -> None:
        np.savez(
            path,
            bin_seconds=self.bin_seconds,
            running=self.running.values,
            failed=self.failed.values,
            usage=self.usage.values,
            meta_keys=self.meta_keys,
            meta_values=self.meta_values,
            has_usage_table=self.has_usage_table,
            has_meta_table=self.has_meta_table,
        )

    @classmethod
    def load(cls, path: Path | str) -> BinnedMachineState:
        with np.load(path) as stored:
            state = cls(float(stored["bin_seconds"]))
            state.running.values, state.failed.values = stored["running"], stored["failed"]
            state.usage.values = stored["usage"]
            state.meta_keys, state.meta_values = stored["meta_keys"], stored["meta_values"]
            state.has_usage_table = bool(stored["has_usage_table"])
            state.has_meta_table = bool(stored["has_meta_table"])
        state.finished = True
        return state


# ---------------------------------------------------------------------------------------------
# Google task_usage: what every task on a machine used, per measurement period
# ---------------------------------------------------------------------------------------------
# The trace measures usage per 5-minute period (its schema document; task_usage windows lie
# within one period and are shorter only where a task started or stopped inside it).
USAGE_PERIOD_US = 300_000_000
# the task_usage columns summed over a machine: CPU, memory, disk time and disk space
MACHINE_USAGE_SOURCES = (
    "cpu_rate",
    "canonical_memory_usage",
    "disk_io_time",
    "local_disk_space_usage",
)
MACHINE_USAGE_COLUMNS = (
    "machine_usage_tasks",
    *(f"machine_{source}_sum" for source in MACHINE_USAGE_SOURCES),
    *(f"machine_{source}_mean" for source in MACHINE_USAGE_SOURCES),
)
USAGE_KEYS_FILE = "machine_usage_keys.npy"
USAGE_SUMS_FILE = "machine_usage_sums.npy"
USAGE_PERIODS_FILE = "machine_usage_periods.npy"


def usage_period(time_us: np.ndarray) -> np.ndarray:
    """The last period complete at `time_us` (period q = [q P, (q + 1) P)): its rows all ended
    by then, so reading it is never reading the future."""
    return np.asarray(time_us, dtype=np.int64) // USAGE_PERIOD_US - 1


def usage_partials(
    machine_code: np.ndarray, start_us: np.ndarray, end_us: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """task_usage rows (machine code, window, (n, k) usage values with NaN = missing) ->
    sorted unique (machine, period) keys and their sums, (cells, 1 + 2k):
    [task time, k usage sums, k present task times], every row weighted by the share of the
    period it covers (so a sum is the period's time-averaged total on the machine). A row
    crossing a period boundary is split by overlap.

    Each cell's sum is `np.add.reduceat` over its rows in row order (as
    `MachineUsageAccumulator.result` adds them), one column at a time: no (rows, 1 + 2k)
    matrix of contributions is built."""
    machine_code = np.asarray(machine_code, dtype=np.int64)
    start_us, end_us = np.asarray(start_us, dtype=np.int64), np.asarray(end_us, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64).reshape(len(machine_code), -1)
    n_sources = values.shape[1]
    if len(machine_code) == 0:
        return np.array([], dtype=np.int64), np.zeros((0, 1 + 2 * n_sources))
    first = start_us // USAGE_PERIOD_US
    n_periods = np.maximum((end_us - 1) // USAGE_PERIOD_US - first + 1, 1)
    if (n_periods == 1).all():  # the usual case: every window inside one period
        row, period, overlap = None, first, end_us - start_us
    else:
        row = np.repeat(np.arange(len(machine_code)), n_periods)
        period = first[row] + (
            np.arange(len(row)) - np.repeat(np.cumsum(n_periods) - n_periods, n_periods)
        )
        overlap = np.minimum(end_us[row], (period + 1) * USAGE_PERIOD_US) - np.maximum(
            start_us[row], period * USAGE_PERIOD_US
        )
        machine_code = machine_code[row]
    weight = np.maximum(overlap, 0) / USAGE_PERIOD_US
    order = _cell_order(machine_code, period)
    keys = composite_key(machine_code[order], period[order])
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    sums = np.empty((len(starts), 1 + 2 * n_sources))
    weight = weight[order]
    sums[:, 0] = np.add.reduceat(weight, starts)
    for j in range(n_sources):
        column = values[:, j] if row is None else values[row, j]
        column = column[order]
        present = ~np.isnan(column)
        sums[:, 1 + j] = np.add.reduceat(np.where(present, column, 0.0) * weight, starts)
        sums[:, 1 + n_sources + j] = np.add.reduceat(present * weight, starts)
    return keys[starts], sums


def _cell_order(machine_code: np.ndarray, period: np.ndarray) -> np.ndarray:
    """The stable order of rows by (machine, period). Rows sorted by time touch few periods,
    so the cells are numbered densely and, when they fit 16 bits, sorted by numpy's radix
    sort (linear) instead of a comparison sort of the int64 keys."""
    low_code, low_period = machine_code.min(), period.min()
    span = int(period.max() - low_period) + 1
    n_cells = (int(machine_code.max() - low_code) + 1) * span
    cell = (machine_code - low_code) * span + (period - low_period)
    if n_cells <= np.iinfo(np.uint16).max + 1:
        cell = cell.astype(np.uint16)
    elif n_cells <= np.iinfo(np.uint32).max + 1:
        cell = cell.astype(np.uint32)
    return np.argsort(cell, kind="stable")


class MachineUsageAccumulator:
    """Partial (machine, period) sums of the task_usage rows of one group of parts, compacted
    as they grow: memory bounded by the cells the parts touch, not by their rows."""

    COMPACT_ROWS = 4_000_000

    def __init__(self, n_sources: int = len(MACHINE_USAGE_SOURCES)):
        self.pieces: list[tuple[np.ndarray, np.ndarray]] = []
        self.n_rows = 0
        self.width = 1 + 2 * n_sources
        self.periods = [np.iinfo(np.int64).max, np.iinfo(np.int64).min]  # covered [first, last]

    def cover(self, start_us: np.ndarray, end_us: np.ndarray) -> None:
        """The periods the parts read speak for (every row's, kept task or not)."""
        if len(start_us):
            self.periods[0] = min(self.periods[0], int(np.min(start_us)) // USAGE_PERIOD_US)
            self.periods[1] = max(self.periods[1], (int(np.max(end_us)) - 1) // USAGE_PERIOD_US)

    def add(self, machine_code, start_us, end_us, values) -> None:
        keys, sums = usage_partials(machine_code, start_us, end_us, values)
        self.pieces.append((keys, sums))
        self.n_rows += len(keys)
        if self.n_rows > self.COMPACT_ROWS:
            self.result()  # compacts the pieces into one

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """The sums so far, keys sorted and unique; they replace the pieces. Equal keys' rows
        summed by `np.add.reduceat` in piece order, computed without holding the pieces, their
        concatenation and its sorted copy at once (the job's peak memory was here)."""
        if not self.pieces:
            return np.array([], dtype=np.int64), np.zeros((0, self.width))
        if len(self.pieces) == 1:  # one piece is already sorted and unique
            return self.pieces[0]
        keys = np.concatenate([k for k, _ in self.pieces])
        sums = np.vstack([s for _, s in self.pieces])
        self.pieces = []
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        sums = sums[order]
        del order
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        merged = keys[starts], np.add.reduceat(sums, starts, axis=0)
        del keys, sums
        self.pieces = [merged]
        self.n_rows = len(merged[0])
        return merged

    def save(self, folder: Path | str) -> None:
        keys, sums = self.result()
        folder = Path(folder)
        np.save(folder / USAGE_KEYS_FILE, keys)
        np.save(folder / USAGE_SUMS_FILE, sums)
        np.save(folder / USAGE_PERIODS_FILE, np.array(self.periods, dtype=np.int64))


class MachineUsageLookup:
    """The machine usage of (machine code, time) queries from the spill folders of every group
    of parts (a period at a group boundary has rows in two folders: their sums add). Each
    folder's arrays are memory-mapped and only read for queries inside its periods, so a
    lookup reads the pages it needs, not the whole trace's cells.

    Columns MACHINE_USAGE_COLUMNS: time-averaged tasks reporting usage on the machine over the
    last period complete at t; per usage source its time-averaged total and its mean per task
    (NaN when no task reported it). NaN everywhere for an unknown machine, or a period no part
    read covers (a machine with no row in a covered period was idle: 0 tasks, sums 0)."""

    def __init__(self, folders: list[Path | str]):
        self.folders = []
        for folder in map(Path, folders):
            if not (folder / USAGE_KEYS_FILE).exists():
                raise FileNotFoundError(
                    f"{folder}: no {USAGE_KEYS_FILE} (spilled before machine usage existed: reconvert)"
                )
            periods = np.load(folder / USAGE_PERIODS_FILE)
            self.folders.append((folder, int(periods[0]), int(periods[1])))

    def state(self, machine_code: np.ndarray, known: np.ndarray, time_us: np.ndarray) -> np.ndarray:
        machine_code = np.asarray(machine_code, dtype=np.int64)
        period = usage_period(time_us)
        k = len(MACHINE_USAGE_SOURCES)
        totals = np.zeros((len(period), 1 + 2 * k))
        covered = np.zeros(len(period), dtype=bool)
        wanted = composite_key(machine_code, np.maximum(period, 0))
        for folder, first, last in self.folders:
            inside = (period >= first) & (period <= last)
            if not inside.any():
                continue
            covered |= inside
            keys = np.load(folder / USAGE_KEYS_FILE, mmap_mode="r")
            if len(keys) == 0:
                continue
            sums = np.load(folder / USAGE_SUMS_FILE, mmap_mode="r")
            rows = np.flatnonzero(inside)
            order = rows[np.argsort(wanted[rows], kind="stable")]  # sorted queries: local reads
            position = np.minimum(np.searchsorted(keys, wanted[order]), len(keys) - 1)
            hit = np.asarray(keys[position]) == wanted[order]
            totals[order[hit]] += np.asarray(sums[position[hit]])
        out = np.empty((len(period), len(MACHINE_USAGE_COLUMNS)))
        out[:, : 1 + k] = totals[:, : 1 + k]  # task time and the sums
        with np.errstate(invalid="ignore", divide="ignore"):
            present = totals[:, 1 + k :]
            out[:, 1 + k :] = np.where(
                present > 0, totals[:, 1 : 1 + k] / np.where(present > 0, present, 1), np.nan
            )
        out[~(covered & np.asarray(known, dtype=bool) & (period >= 0))] = np.nan
        return out
