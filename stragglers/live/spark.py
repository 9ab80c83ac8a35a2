"""What the Spark REST API says, in the task table's terms: a stage attempt is a job, a
task index a task, each task attempt an attempt (as stragglers/convert/spark_eventlog.py reads
the event log), and the cumulative task metrics a heartbeat last reported.

Times: the API writes dates as `2026-11-27T15:03:43.136GMT` (milliseconds, UTC); they are kept
as integer milliseconds here so that the text written to the table is exact.
"""

from __future__ import annotations

import calendar
import time
from dataclasses import dataclass
from typing import Any

from stragglers.convert.spark_eventlog import LOCALITY

# usage measurements: name -> the cumulative task metrics it is the rate of, and the unit
# divisor to a per-second rate of seconds, records or bytes. Rates, not per-window deltas:
# the replay's features are duration-weighted means of the windows, and the weighted mean of
# rates is the attempt's mean rate so far (CPU-seconds per second, records per second, ...).
# `cpu_rate` is the name LATE's, SRQuant's and LASER's progress proxy reads (docs/methods.md).
MEASURES: dict[str, tuple[tuple[str, ...], float]] = {
    "cpu_rate": (("executorCpuTime",), 1e9),  # ns of JVM CPU per second
    "gc_rate": (("jvmGcTime",), 1e3),  # ms of GC per second
    "records_read_rate": (("inputMetrics.recordsRead", "shuffleReadMetrics.recordsRead"), 1.0),
    "bytes_read_rate": (
        (
            "inputMetrics.bytesRead",
            "shuffleReadMetrics.remoteBytesRead",
            "shuffleReadMetrics.localBytesRead",
        ),
        1.0,
    ),
    "records_written_rate": (
        ("outputMetrics.recordsWritten", "shuffleWriteMetrics.recordsWritten"),
        1.0,
    ),
    "bytes_written_rate": (
        ("outputMetrics.bytesWritten", "shuffleWriteMetrics.bytesWritten"),
        1.0,
    ),
    "spill_bytes_rate": (("memoryBytesSpilled", "diskBytesSpilled"), 1.0),
}

# TaskData.status -> the task table's status ("" = running); UNKNOWN is not recorded
STATUS = {"RUNNING": "", "SUCCESS": "finished", "FAILED": "failed", "KILLED": "killed"}


def parse_date_ms(text: str) -> int:
    """`2026-11-27T15:03:43.136GMT` -> milliseconds since the epoch."""
    stamp = text.removesuffix("GMT").removesuffix("Z")
    whole, _, fraction = stamp.partition(".")
    seconds = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S"))
    return seconds * 1000 + int((fraction + "000")[:3])


def cumulative_metrics(metrics: dict[str, Any] | None) -> tuple[float, ...]:
    """The MEASURES' cumulative sums from a TaskData's taskMetrics, in their units (0 where a
    heartbeat has not reported yet: a running task's metrics are null until then)."""
    out = []
    for paths, divisor in MEASURES.values():
        total = 0.0
        for path in paths:
            value: Any = metrics or {}
            for part in path.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            total += float(value or 0)
        out.append(total / divisor)
    return tuple(out)


@dataclass(frozen=True)
class TaskAttempt:
    """One TaskData of a stage attempt's taskList."""

    index: int
    attempt: int
    launch_ms: int
    end_ms: int | None  # None while running
    status: str  # the task table's ("" running)
    host: str
    speculative: bool
    locality: float
    metrics: tuple[float, ...]


def task_attempt(data: dict[str, Any]) -> TaskAttempt | None:
    """A TaskData as a TaskAttempt; None for a status the table has no word for (UNKNOWN)."""
    status = STATUS.get(str(data.get("status", "")).upper())
    if status is None:
        return None
    if status == "failed" and "ExecutorLostFailure" in str(data.get("errorMessage", "")):
        status = "lost"  # as the event log reader: the executor went, not the task's fault
    launch = parse_date_ms(data["launchTime"])
    # an ended attempt's duration is its finish time less its launch time (Spark's
    # TaskInfo.duration); a running attempt's is only how long it had run when last updated
    end = None if status == "" else launch + int(data.get("duration") or 0)
    return TaskAttempt(
        index=int(data["index"]),
        attempt=int(data["attempt"]),
        launch_ms=launch,
        end_ms=end,
        status=status,
        host=str(data.get("host", "")),
        speculative=bool(data.get("speculative", False)),
        locality=float(LOCALITY.get(data.get("taskLocality"), float("nan"))),
        metrics=cumulative_metrics(data.get("taskMetrics")),
    )


def job_id(app_id: str, stage: int, attempt: int) -> str:
    """A stage attempt's job id, as the event-log reader names it."""
    return f"{app_id}_stage{stage}.{attempt}"
