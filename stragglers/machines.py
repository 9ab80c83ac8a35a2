"""The state of a machine over time, from the Google trace's task_events and machine_events.

A task's own counters say little about the node it runs on; Wrangler and START read the
*machine's* state (its load, its recent failures, its size). This module builds, from every
task event of every job and priority (not only the jobs kept), a `MachineTimeline` that
answers "what was machine m like at time t?" for millions of (m, t) queries at once:

    machine_running_tasks      attempts running on m at t (SCHEDULE <= t < the attempt's end)
    machine_cpu_requested      their summed CPU requests (normalised units, as in the trace)
    machine_memory_requested   their summed memory requests
    machine_evictions_so_far   EVICT events on m at or before t
    machine_failures_so_far    FAIL events on m at or before t
    machine_cpu_capacity       CPUs of m at t (machine_events: last ADD/UPDATE; NaN after a
                               REMOVE, before the first event, or without a machine_events table)
    machine_memory_capacity    memory of m at t (same rules)

An attempt runs from a SCHEDULE to the task's next EVICT, FAIL, FINISH, KILL or LOST (to the
end of the parts read if none); its requests are those on its SCHEDULE row (a missing request
counts 0 and is counted in the report). Every query is a binary search on sorted
(machine, time) keys, so a query costs O(log n) whatever the machine.

Unknown machine (missing id, or an id with no event at all): every value is NaN.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd

from stragglers import schema
from stragglers.jobdata import LAUNCH_PREFIX  # per-task columns: the state just before launch

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
    return [LAUNCH_PREFIX + c for c in columns]


def _keys(code: np.ndarray, time_us: np.ndarray) -> np.ndarray:
    return (code.astype(np.int64) << TIME_BITS) + time_us.astype(np.int64)


def attempt_intervals(events: pd.DataFrame, horizon_us: int) -> pd.DataFrame:
    """(machine, start, end, cpu_request, memory_request) of every attempt with a machine.

    `events` sorted by (job, task, timestamp); an attempt is a SCHEDULE until the task's next
    terminal event (EVICT, FAIL, FINISH, KILL, LOST); attempts still open when the parts end
    run to `horizon_us`. Requests are NaN when the columns are absent or the field is empty."""
    n = len(events)
    if n == 0:
        return pd.DataFrame(
            {c: np.array([], dtype=float) for c in ("machine_id", "start", "end", "cpu_request", "memory_request")}
        )
    kind = events["event_type"].to_numpy()
    job, task = events["job_id"].to_numpy(), events["task_index"].to_numpy()
    task_change = np.r_[True, (np.diff(job) != 0) | (np.diff(task) != 0)]
    group = np.cumsum(task_change) - 1
    # index of the next terminal event at or after each row (n if none), by a reverse scan
    candidate = np.where(np.isin(kind, TERMINAL_EVENTS), np.arange(n), n)
    next_terminal = np.minimum.accumulate(candidate[::-1])[::-1]
    schedule_rows = np.flatnonzero(kind == schema.EventType.SCHEDULE)
    end_row = np.where(schedule_rows + 1 < n, next_terminal[np.minimum(schedule_rows + 1, n - 1)], n)
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
        origin = _keys(code, np.full(len(code), -1))  # just before the machine's first key
        out = np.full((len(code), len(MACHINE_STATE_COLUMNS)), np.nan)

        def window_sum(keys: np.ndarray, prefix: np.ndarray) -> np.ndarray:
            upper = np.searchsorted(keys, at, side="right")
            lower = np.searchsorted(keys, origin, side="right")
            return prefix[upper] - prefix[lower]

        running = window_sum(self.start_keys, self.start_prefix) - window_sum(self.end_keys, self.end_prefix)
        out[:, 0:3] = running
        for column, keys in ((3, self.eviction_keys), (4, self.failure_keys)):
            out[:, column] = np.searchsorted(keys, at, side="right") - np.searchsorted(keys, origin, side="right")
        if len(self.capacity_keys):
            last = np.searchsorted(self.capacity_keys, at, side="right") - 1
            valid = (last >= 0) & (last >= np.searchsorted(self.capacity_keys, origin, side="right"))
            out[:, 5:7] = np.where(valid[:, None], self.capacity[np.maximum(last, 0)], np.nan)
        out[~known] = np.nan
        # sums of requests cancel in floating point: tiny negatives and residues are noise
        out[:, 0:3] = np.where(np.abs(out[:, 0:3]) < 1e-9, 0.0, out[:, 0:3])
        return out

    # -- storage --------------------------------------------------------------------------
    def save(self, path: Path | str) -> None:
        np.savez(path, **{f.name: np.asarray(getattr(self, f.name)) for f in fields(self)})

    @classmethod
    def load(cls, path: Path | str) -> "MachineTimeline":
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
    ids = [intervals["machine_id"].to_numpy(), point_machine[~np.isnan(point_machine)].astype(np.int64)]
    if machine_events is not None:
        ids.append(machine_events["machine_id"].to_numpy(dtype=np.int64))
    machines = np.unique(np.concatenate(ids)) if ids else np.array([], dtype=np.int64)
    if len(machines) >= MAX_MACHINE_CODES:
        raise ValueError(f"{len(machines)} machines: more than the {MAX_MACHINE_CODES} the timeline keys hold")
    timeline = MachineTimeline(
        machines=machines.astype(np.int64),
        start_keys=np.array([], dtype=np.int64), start_prefix=np.zeros((1, 3)),
        end_keys=np.array([], dtype=np.int64), end_prefix=np.zeros((1, 3)),
        eviction_keys=np.array([], dtype=np.int64), failure_keys=np.array([], dtype=np.int64),
        capacity_keys=np.array([], dtype=np.int64), capacity=np.zeros((0, 2)),
        has_capacity_table=machine_events is not None,
    )
    code, _ = timeline.codes(intervals["machine_id"].to_numpy(dtype=float))
    requests = intervals[["cpu_request", "memory_request"]].to_numpy(dtype=float)
    counts["attempts_without_request"] = int(np.isnan(requests).any(axis=1).sum())
    weights = np.column_stack([np.ones(len(intervals)), np.nan_to_num(requests, nan=0.0)])
    timeline.start_keys, timeline.start_prefix = _prefix(_keys(code, intervals["start"].to_numpy()), weights)
    timeline.end_keys, timeline.end_prefix = _prefix(_keys(code, intervals["end"].to_numpy()), weights)
    counts["schedule_events_without_machine"] = int(
        ((point_kind == schema.EventType.SCHEDULE) & np.isnan(point_machine)).sum()
    )
    for name, event_type in (("eviction_keys", schema.EventType.EVICT), ("failure_keys", schema.EventType.FAIL)):
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
    from stragglers.rawcsv import iter_csv_chunks

    if not parts:
        report.count("machine_events_table_missing")
        return None
    frames = []
    for part in parts:
        report.files_read.append(str(part))
        for chunk in iter_csv_chunks(
            part, schema.GOOGLE_MACHINE_EVENTS, MACHINE_EVENT_TYPES,
            usecols=["timestamp", "machine_id", "event_type", "cpus", "memory"],
            skipped=report.skipped_rows,
        ):
            required = ["timestamp", "machine_id", "event_type"]
            missing = chunk[required].isna().any(axis=1)
            report.skipped_rows.add(
                part, None, "empty timestamp/machine/event type", "missing required field", n=int(missing.sum())
            )
            frames.append(chunk[~missing])
    if not frames:
        return pd.DataFrame({c: np.array([], dtype=float) for c in ("timestamp", "machine_id", "event_type", "cpus", "memory")})
    table = pd.concat(frames, ignore_index=True)
    for column in ("timestamp", "machine_id", "event_type"):
        table[column] = table[column].astype(np.int64)
    report.count("machine_event_rows", len(table))
    return table


def first_schedule_machine(events: pd.DataFrame, job_id: np.ndarray, task_index: np.ndarray) -> np.ndarray:
    """Machine (float, NaN if missing) of each task's first SCHEDULE; `events` sorted by
    (job, task, timestamp)."""
    schedules = events[events["event_type"] == schema.EventType.SCHEDULE]
    first = schedules.groupby(["job_id", "task_index"], sort=False)["machine_id"].first()
    index = pd.MultiIndex.from_arrays([job_id, task_index])
    return first.reindex(index).to_numpy(dtype=float)


def launch_state(timeline: MachineTimeline, machine: np.ndarray, start_us: np.ndarray) -> np.ndarray:
    """The machine's state just before each task started (1 µs before its first SCHEDULE):
    what a scheduler placing the task could have read; the task itself is not counted."""
    return timeline.state(machine, np.asarray(start_us, dtype=np.int64) - 1)
