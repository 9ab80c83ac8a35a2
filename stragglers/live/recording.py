"""A live recording: the task table (kind `tasks-table`, docs/your-own-trace.md) of a Spark
application, written poll by poll, with a usage table of one window per poll per running
attempt, and `polls.csv` (one line per completed poll).

Files in the output folder, and how each is written so that a `kill -9` at any moment leaves
a valid table of the polls completed so far:

- `tasks.csv`: every attempt seen, one row each, rewritten whole under a temporary name and
  renamed at each poll (a few hundred bytes per attempt);
- `usage.csv`: appended, one `os.write` per poll of whole lines (a killed process finishes
  the write call it is in), after `tasks.csv` holds every attempt the new rows name;
- `polls.csv`: appended last, one line per poll with the size `usage.csv` had then: a poll is
  complete when its line is there. A restart with the same folder cuts `usage.csv` back to
  the last complete poll and continues;
- `recording.json`: the application, the URL and the settings, written once.

Numbers are written as text once and read back by pandas' parser into the floats the watcher
uses (`numbers_as_read`), so a method live and the replay of the files see the same bits: pandas'
CSV parser does not round-trip every 17-digit float.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from stragglers.formats import tasks_table as table_format
from stragglers.io import write_atomic, write_text_atomic
from stragglers.live.client import LiveError
from stragglers.live.spark import MEASURES, TaskAttempt

TASKS = "tasks.csv"
USAGE = "usage.csv"
POLLS = "polls.csv"
META = "recording.json"
TASK_COLUMNS = [
    *table_format.ATTEMPT_KEYS,
    "start_time",
    "end_time",
    "status",
    "machine_id",
    "speculative",
    "request_locality",
]
USAGE_COLUMNS = [*table_format.USAGE_KEYS, *MEASURES]
POLL_COLUMNS = [
    "poll",
    "time",
    "stages_seen",
    "attempts_running",
    "windows",
    "usage_bytes",
    "errors",
]


def ms_text(ms: int) -> str:
    """Integer milliseconds as exact decimal seconds."""
    sign, ms = ("-", -ms) if ms < 0 else ("", ms)
    return f"{sign}{ms // 1000}.{ms % 1000:03d}"


def numbers_as_read(texts: list[str]) -> np.ndarray:
    """Texts as the table's reader parses them (pandas.to_numeric; "" is missing)."""
    if not texts:
        return np.zeros(0)
    series = pd.Series([t if t != "" else None for t in texts], dtype=object)
    return pd.to_numeric(series, errors="coerce").to_numpy(np.float64)


def _value_text(value: float) -> str:
    return "" if not np.isfinite(value) else format(value, ".12g")


@dataclass
class Attempt:
    """One task attempt as recorded, with what its next window needs."""

    job_id: str
    task: int
    attempt: int
    row: int  # its row in tasks.csv (0-based): attempts keep the order they were first seen
    start_text: str
    start: float
    end_text: str = ""
    end: float = float("nan")
    status: str = ""
    host: str = ""
    speculative: bool = False
    locality: float = float("nan")
    last_end: float = float("nan")  # end of its latest window (NaN: none yet)
    cumulative: tuple[float, ...] = ()
    closed: bool = False  # ended and its last window written

    def row_texts(self) -> list[str]:
        return [
            self.job_id,
            str(self.task),
            str(self.attempt),
            self.start_text,
            self.end_text,
            self.status,
            self.host,
            "true" if self.speculative else "false",
            _value_text(self.locality),
        ]


@dataclass
class Window:
    """One usage row, as the watcher reads it (floats as parsed from their text)."""

    job_id: str
    task: int
    attempt: int
    start: float
    end: float
    available: float
    values: np.ndarray


@dataclass
class PollUpdate:
    """What one poll added: the new attempts, the attempts that ended, the new windows."""

    time: float
    new: list[Attempt] = field(default_factory=list)
    ended: list[Attempt] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)
    late_ends: int = 0  # attempts that ended before their last window's end (listener lag)


class Recording:
    """The recording in `folder`, restored from its files if it has some."""

    def __init__(self, folder: Path | str, app_id: str | None, settings: dict, keep_windows=False):
        self.folder = Path(folder)
        self.attempts: dict[tuple[str, int, int], Attempt] = {}
        self.poll_times: list[float] = []
        self.keep_windows = keep_windows
        self.windows: dict[str, list[Window]] = {}
        self.usage_bytes = 0
        meta_path = self.folder / META
        if meta_path.exists():
            meta = json.loads(meta_path.read_text())
            if app_id is not None and meta["app_id"] != app_id:
                raise LiveError(
                    f"{meta_path}: this folder records application {meta['app_id']!r}, not "
                    f"{app_id!r}; use another --out"
                )
            self.meta = meta
            self._restore()
        else:
            if app_id is None:
                raise LiveError("a new recording needs the application id")
            clashing = sorted(
                path.name
                for path in (self.folder.iterdir() if self.folder.is_dir() else ())
                if path.name == POLLS or path.name.startswith(("tasks.", "usage."))
            )
            if clashing:  # a task table of something else: never overwritten
                raise LiveError(
                    f"{self.folder}: holds {', '.join(clashing)} but no {META}: not a live "
                    "recording; use another --out"
                )
            self.meta = {"app_id": app_id, "measures": list(MEASURES), **settings}
            self.folder.mkdir(parents=True, exist_ok=True)
            self._write_tasks()
            header = _csv_lines([USAGE_COLUMNS])
            (self.folder / USAGE).write_text(header)
            self.usage_bytes = len(header.encode())
            (self.folder / POLLS).write_text(_csv_lines([POLL_COLUMNS]))
            write_text_atomic(json.dumps(self.meta, indent=1) + "\n", meta_path)

    @property
    def app_id(self) -> str:
        return self.meta["app_id"]

    # -- one poll ------------------------------------------------------------------------

    def update(self, time_ms: int, job_id: str, tasks: list[TaskAttempt], out: PollUpdate):
        """Add one stage attempt's taskList at poll time `time_ms` to `out` (not yet written).
        Texts are parsed in one call per kind (pandas per call costs more than per value)."""
        t = out.time
        seen = []
        for task in sorted(tasks, key=lambda a: (a.index, a.attempt)):
            key = (job_id, task.index, task.attempt)
            known = self.attempts.get(key)
            if known is None:
                known = Attempt(
                    job_id=job_id,
                    task=task.index,
                    attempt=task.attempt,
                    row=len(self.attempts),
                    start_text=ms_text(task.launch_ms),
                    start=float("nan"),
                    host=task.host,
                    speculative=task.speculative,
                    locality=task.locality,
                    cumulative=(0.0,) * len(MEASURES),
                )
                self.attempts[key] = known
                out.new.append(known)
            if not known.closed:
                seen.append((known, task))
        fresh = [a for a in out.new if np.isnan(a.start)]
        for attempt, value in zip(fresh, numbers_as_read([a.start_text for a in fresh])):
            attempt.start = float(value)
        ended = [(a, task) for a, task in seen if task.status != ""]
        for (attempt, task), value in zip(
            ended, numbers_as_read([ms_text(task.end_ms) for _, task in ended])
        ):
            attempt.status, attempt.end_text = task.status, ms_text(task.end_ms)
            attempt.end = float(value)
            out.ended.append(attempt)
        pending = []  # (attempt, window start, end, available, rate texts)
        for attempt, task in seen:
            if task.status == "":
                if task.launch_ms <= time_ms:
                    pending.append(self._window(attempt, t, t, task.metrics))
                continue
            # the last stretch, read at this poll (or at its end, if it ended after the poll
            # time: a window is never available before it ends)
            if attempt.end < (attempt.start if np.isnan(attempt.last_end) else attempt.last_end):
                out.late_ends += 1
            pending.append(self._window(attempt, attempt.end, max(t, attempt.end), task.metrics))
            attempt.closed = True
        pending = [p for p in pending if p is not None]
        values = numbers_as_read([text for *_, texts in pending for text in texts])
        values = values.reshape(len(pending), len(MEASURES))
        for (attempt, start, end, available, _), row in zip(pending, values):
            out.windows.append(
                Window(attempt.job_id, attempt.task, attempt.attempt, start, end, available, row)
            )

    def _window(self, attempt: Attempt, end: float, available: float, metrics):
        """The attempt's next window up to `end`, its rates as text; None if it is empty."""
        start = attempt.start if np.isnan(attempt.last_end) else attempt.last_end
        if not end > start:
            return None
        deltas = np.subtract(metrics, attempt.cumulative)
        attempt.last_end, attempt.cumulative = end, tuple(metrics)
        return attempt, start, end, available, [_value_text(d / (end - start)) for d in deltas]

    def commit(self, poll: PollUpdate, stats: dict) -> None:
        """Write the poll: tasks.csv (atomically), then its usage rows, then its poll line."""
        self._write_tasks()
        if poll.windows:
            rows = [
                [
                    w.job_id,
                    str(w.task),
                    str(w.attempt),
                    _time_text(w.start),
                    _time_text(w.end),
                    _time_text(w.available),
                    *[_value_text(v) for v in w.values],
                ]
                for w in poll.windows
            ]
            self.usage_bytes += _append(self.folder / USAGE, _csv_lines(rows))
        if self.keep_windows:
            for w in poll.windows:
                self.windows.setdefault(w.job_id, []).append(w)
        self.poll_times.append(poll.time)
        line = [
            str(len(self.poll_times) - 1),
            _time_text(poll.time),
            str(stats.get("stages_seen", 0)),
            str(stats.get("attempts_running", 0)),
            str(len(poll.windows)),
            str(self.usage_bytes),
            json.dumps(stats.get("errors", {}), separators=(",", ":")),
        ]
        _append(self.folder / POLLS, _csv_lines([line]))

    def _write_tasks(self) -> None:
        ordered = sorted(self.attempts.values(), key=lambda a: a.row)
        text = _csv_lines([TASK_COLUMNS, *(a.row_texts() for a in ordered)])
        write_atomic(self.folder / TASKS, lambda staging: staging.write_text(text))

    # -- restart -------------------------------------------------------------------------

    def _restore(self) -> None:
        """The state after the last complete poll: usage.csv cut back to the size polls.csv
        recorded; every attempt of tasks.csv; each attempt's latest window and cumulative
        metrics (the sum of rate x length of its windows)."""
        polls_path, usage_path = self.folder / POLLS, self.folder / USAGE
        text = polls_path.read_text()
        if not text.endswith("\n"):  # a poll line cut short: that poll did not complete
            text = text[: text.rfind("\n") + 1]
            polls_path.write_text(text)
        polls = list(csv.DictReader(io.StringIO(text)))
        self.poll_times = [float(numbers_as_read([p["time"]])[0]) for p in polls]
        header_size = len(_csv_lines([USAGE_COLUMNS]).encode())
        self.usage_bytes = int(polls[-1]["usage_bytes"]) if polls else header_size
        with open(usage_path, "r+b") as usage:
            usage.truncate(self.usage_bytes)
        with open(self.folder / TASKS, newline="") as handle:
            for row in csv.DictReader(handle):
                key = (row["job_id"], int(row["task_id"]), int(row["attempt"]))
                self.attempts[key] = Attempt(
                    job_id=row["job_id"],
                    task=key[1],
                    attempt=key[2],
                    row=len(self.attempts),
                    start_text=row["start_time"],
                    start=float(numbers_as_read([row["start_time"]])[0]),
                    end_text=row["end_time"],
                    end=float(numbers_as_read([row["end_time"]])[0]) if row["end_time"] else np.nan,
                    status=row["status"],
                    host=row["machine_id"],
                    speculative=row["speculative"] == "true",
                    locality=float(numbers_as_read([row["request_locality"]])[0]),
                    cumulative=(0.0,) * len(MEASURES),
                )
        usage = pd.read_csv(usage_path, dtype={"job_id": str})
        measures = list(MEASURES)
        if len(usage):
            length = (usage["window_end"] - usage["window_start"]).to_numpy()
            sums = usage[measures].fillna(0).mul(length, axis=0)
            sums[["job_id", "task_id", "attempt"]] = usage[["job_id", "task_id", "attempt"]]
            sums["last_end"] = usage["window_end"]
            grouped = sums.groupby(["job_id", "task_id", "attempt"])
            totals, last = grouped[measures].sum(), grouped["last_end"].max()
            for key, values in totals.iterrows():
                attempt = self.attempts.get((str(key[0]), int(key[1]), int(key[2])))
                if attempt is not None:
                    attempt.cumulative = tuple(float(v) for v in values)
                    attempt.last_end = float(last.loc[key])
        for attempt in self.attempts.values():
            # an ended attempt whose last window was not written (the poll that saw it end
            # did not complete) is closed at the next poll that serves it
            attempt.closed = attempt.status != "" and attempt.last_end >= attempt.end


def _time_text(value: float) -> str:
    """A time already parsed from an exact text (milliseconds) written back the same."""
    return ms_text(round(value * 1000))


def _csv_lines(rows) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


def _append(path: Path, text: str) -> int:
    """Append `text` in one write call and flush it to disk; returns the bytes written."""
    data = text.encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        written = os.write(fd, data)
        if written != len(data):
            raise LiveError(f"{path}: short write ({written} of {len(data)} bytes; disk full?)")
        os.fsync(fd)
    finally:
        os.close(fd)
    return written
