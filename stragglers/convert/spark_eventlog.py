"""Spark application event logs (dataset kind `spark-eventlog`) -> a task table, which the
task-table converter turns into per-job files. Single files (plain or compressed with any
codec Spark writes) and Spark 4's rolling `eventlog_v2_<app id>/` folders are read as a
stream, line by line; a stage attempt is a job, a task index a task, its attempts and
speculative copies attempts. Task metrics are reported only when an attempt ends, so they are
not features. Columns and status mapping: docs/your-own-trace.md ("Spark event logs directly").

    python -m stragglers.convert.spark_eventlog <event logs folder or file>... <out folder>
"""

from __future__ import annotations

import json
import logging
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stragglers.convert.common import _cleaning_up_on_failure
from stragglers.formats.dataset_spec import MIN_TASKS

log = logging.getLogger(__name__)

KIND = "spark-eventlog"
CODECS = ("zstd", "lz4", "snappy", "lzf")
LOCALITY = {"PROCESS_LOCAL": 0, "NODE_LOCAL": 1, "NO_PREF": 2, "RACK_LOCAL": 3, "ANY": 4}
STATUS = {
    "Success": "finished",
    "TaskKilled": "killed",
    "ExecutorLostFailure": "lost",
}  # any other reason: failed
ROLLING_PREFIX = "eventlog_v2_"
_PART = re.compile(r"^events_(\d+)_")
_CHUNK = 1 << 20


class EventLogError(ValueError):
    """An event log that cannot be read: the message names the file (and line)."""


# --- the codecs' stream formats -----------------------------------------------------------


def _read_exact(stream, n: int, path: Path) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise EventLogError(f"{path}: truncated compressed stream")
    return data


def _lz4_blocks(stream, path: Path) -> Iterator[bytes]:
    """Spark's lz4 codec (lz4-java's LZ4BlockOutputStream): blocks of an 8-byte magic
    `LZ4Block`, a token (method | level), compressed and original lengths and a checksum
    (little-endian int32s), then the block; an empty block ends the stream."""
    import pyarrow as pa

    codec = pa.Codec("lz4_raw")
    while True:
        magic = stream.read(8)
        if not magic:
            return
        if magic != b"LZ4Block":
            raise EventLogError(f"{path}: not an LZ4 block stream (Spark's lz4 codec)")
        token, compressed, original, _checksum = struct.unpack(
            "<Biii", _read_exact(stream, 13, path)
        )
        if original == 0:
            # the end mark; lz4-java may concatenate streams, so look for another
            continue
        data = _read_exact(stream, compressed, path)
        if token & 0xF0 == 0x10:  # stored raw
            yield data
        else:
            yield codec.decompress(data, decompressed_size=original, asbytes=True)


def _varint(data: bytes) -> int:
    value, shift = 0, 0
    for byte in data[:10]:
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value
        shift += 7
    raise ValueError("bad varint")


def _snappy_blocks(stream, path: Path) -> Iterator[bytes]:
    """Spark's snappy codec (snappy-java's SnappyOutputStream): a 16-byte header (magic
    `\\x82SNAPPY\\x00`, two big-endian int32 versions), then chunks of a big-endian int32
    length and raw snappy data (which starts with its uncompressed length as a varint)."""
    import pyarrow as pa

    codec = pa.Codec("snappy")
    header = stream.read(16)
    if header[:8] != b"\x82SNAPPY\x00":
        raise EventLogError(f"{path}: not a snappy stream (Spark's snappy codec)")
    while True:
        size = stream.read(4)
        if not size:
            return
        if len(size) < 4:
            raise EventLogError(f"{path}: truncated compressed stream")
        (length,) = struct.unpack(">i", size)
        data = _read_exact(stream, length, path)
        yield codec.decompress(data, decompressed_size=_varint(data), asbytes=True)


def _lzf_decompress(data: bytes, size: int) -> bytes:
    """LZF (liblzf's format, as compress-lzf writes it): literal runs and back-references."""
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        control = data[i]
        i += 1
        if control < 32:  # a literal run of control + 1 bytes
            out += data[i : i + control + 1]
            i += control + 1
            continue
        length = control >> 5
        if length == 7:
            length += data[i]
            i += 1
        offset = len(out) - ((control & 0x1F) << 8) - data[i] - 1
        i += 1
        for k in range(length + 2):  # may overlap what it copies
            out.append(out[offset + k])
    if len(out) != size:
        raise ValueError(f"LZF chunk decompressed to {len(out)} bytes, expected {size}")
    return bytes(out)


def _lzf_blocks(stream, path: Path) -> Iterator[bytes]:
    """Spark's lzf codec (compress-lzf's LZFOutputStream): chunks of `ZV`, a type (0 stored,
    1 compressed), a big-endian uint16 length and, compressed, the uncompressed length."""
    while True:
        head = stream.read(5)
        if not head:
            return
        if len(head) < 5 or head[:2] != b"ZV":
            raise EventLogError(f"{path}: not an LZF stream (Spark's lzf codec)")
        kind, length = head[2], struct.unpack(">H", head[3:5])[0]
        if kind == 0:
            yield _read_exact(stream, length, path)
        else:
            (size,) = struct.unpack(">H", _read_exact(stream, 2, path))
            yield _lzf_decompress(_read_exact(stream, length, path), size)


def _codec_of(path: Path) -> str | None:
    name = path.name.removesuffix(".inprogress")
    suffix = name.rsplit(".", 1)[-1] if "." in name else ""
    return suffix if suffix in CODECS or suffix == "zst" else None


def _chunks(path: Path) -> Iterator[bytes]:
    codec = _codec_of(path)
    if codec in ("zstd", "zst"):
        import pyarrow as pa

        with pa.CompressedInputStream(pa.OSFile(str(path)), "zstd") as stream:
            while chunk := stream.read(_CHUNK):
                yield chunk
        return
    with path.open("rb") as stream:
        if codec is None:
            while chunk := stream.read(_CHUNK):
                yield chunk
        else:
            yield from {"lz4": _lz4_blocks, "snappy": _snappy_blocks, "lzf": _lzf_blocks}[codec](
                stream, path
            )


def iter_lines(path: Path) -> Iterator[bytes]:
    """The lines of one event-log file, decompressed as they are read."""
    rest = b""
    try:
        for chunk in _chunks(path):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            yield from lines
    except EventLogError:
        raise
    except Exception as error:  # a corrupt stream: name the file
        raise EventLogError(f"{path}: cannot be read ({type(error).__name__}: {error})") from None
    # an application still running (`.inprogress`) may end in a line being written: not an event
    if rest and not path.name.endswith(".inprogress"):
        yield rest


# --- finding the logs -----------------------------------------------------------------------


def event_log_entries(folder: Path | str) -> list[str]:
    """The event logs in a folder, by name: single files and rolling folders
    (`eventlog_v2_<app id>/`); hidden files, checksums and other folders are skipped. None is
    an error naming the folder (the workflow asks this when it loads)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise EventLogError(f"{folder}: not a folder of Spark event logs")
    entries = [
        child.name
        for child in sorted(folder.iterdir())
        if not child.name.startswith((".", "_"))
        and not child.name.endswith(".crc")
        and (child.is_file() or child.name.startswith(ROLLING_PREFIX))
    ]
    if not entries:
        raise EventLogError(
            f"{folder}: no Spark event log (a file, or a folder {ROLLING_PREFIX}<app id>/)"
        )
    return entries


def log_files(paths) -> list[list[Path]]:
    """One list of files per application, in reading order: a rolling folder's parts sorted by
    their index, a single file alone, a folder's event logs (event_log_entries) each so."""
    apps: list[list[Path]] = []
    for raw in [paths] if isinstance(paths, (str, Path)) else paths:
        path = Path(raw)
        if not path.exists():
            raise EventLogError(f"{path}: no such event log or folder")
        if path.is_dir() and path.name.startswith(ROLLING_PREFIX):
            parts = sorted(
                (int(m.group(1)), p)
                for p in path.iterdir()
                if (m := _PART.match(p.name)) and p.is_file()
            )
            if not parts:
                raise EventLogError(f"{path}: a rolling event log folder with no events_<n>_ part")
            apps.append([p for _, p in parts])
        elif path.is_dir():
            apps.extend(log_files([path / name for name in event_log_entries(path)]))
        else:
            apps.append([path])
    return apps


# --- events -> attempts ---------------------------------------------------------------------

_WANTED = (
    b'"SparkListenerTaskStart"',
    b'"SparkListenerTaskEnd"',
    b'"SparkListenerApplicationStart"',
)


def _app_name(files: list[Path]) -> str:
    first = files[0]
    name = (
        first.parent.name[len(ROLLING_PREFIX) :]
        if first.name.startswith("events_")
        else (first.name.removesuffix(".inprogress"))
    )
    codec = _codec_of(Path(name))
    return name.rsplit(".", 1)[0] if codec else name


def read_application(files: list[Path], counts: dict[str, int]) -> pd.DataFrame:
    """One application's task attempts as task-table rows."""
    app_id = None
    attempts: dict[int, dict[str, Any]] = {}  # Task ID -> row
    for path in files:
        for number, line in enumerate(iter_lines(path), start=1):
            head = line[:64]
            if not any(w in head for w in _WANTED):
                continue
            try:
                event = json.loads(line)
                kind = event["Event"]
                if kind == "SparkListenerApplicationStart":
                    app_id = event.get("App ID") or app_id
                    continue
                info = event["Task Info"]
                tid = info["Task ID"]
                if kind == "SparkListenerTaskStart":
                    attempts[tid] = {
                        "stage": event["Stage ID"],
                        "stage_attempt": event["Stage Attempt ID"],
                        "task_id": info["Index"],
                        "attempt": info["Attempt"],
                        "start_time": info["Launch Time"] / 1000.0,
                        "end_time": np.nan,
                        "status": None,
                        "machine_id": info["Host"],
                        "speculative": bool(info.get("Speculative", False)),
                        "request_locality": LOCALITY.get(info.get("Locality"), np.nan),
                    }
                    continue
                row = attempts.get(tid)
                if row is None:
                    counts["end_events_without_start"] = (
                        counts.get("end_events_without_start", 0) + 1
                    )
                    continue
                if row["status"] is not None:
                    counts["repeated_end_events"] = counts.get("repeated_end_events", 0) + 1
                    continue
                reason = event["Task End Reason"]["Reason"]
                row["status"] = STATUS.get(reason, "failed")
                row["end_time"] = info["Finish Time"] / 1000.0
            except (KeyError, TypeError, ValueError) as error:
                raise EventLogError(
                    f"{path}: line {number}: not a Spark listener event as expected "
                    f"({type(error).__name__}: {error})"
                ) from None
    app_id = app_id or _app_name(files)
    frame = pd.DataFrame(
        list(attempts.values()),
        columns=[
            "stage",
            "stage_attempt",
            "task_id",
            "attempt",
            "start_time",
            "end_time",
            "status",
            "machine_id",
            "speculative",
            "request_locality",
        ],
    )
    job = app_id + "_stage" + frame["stage"].astype(str) + "." + frame["stage_attempt"].astype(str)
    frame.insert(0, "job_id", job)
    counts["attempts"] = counts.get("attempts", 0) + len(frame)
    return frame.drop(columns=["stage", "stage_attempt"])


def read_event_logs(paths) -> tuple[pd.DataFrame, dict[str, int]]:
    """Every application's task attempts as one task table, and counts of what was read."""
    counts: dict[str, int] = {}
    apps = log_files(paths)
    if not apps:
        raise EventLogError(f"{paths}: no event log found")
    frames = [read_application(files, counts) for files in apps]
    counts["applications"] = len(apps)
    table = pd.concat(frames, ignore_index=True)
    table["status"] = table["status"].astype(object)
    return table, counts


def write_task_table(paths, out: Path | str) -> dict[str, int]:
    """The event logs' task attempts as `<out>/tasks.parquet` (written whole, then renamed)."""
    from stragglers.io import write_parquet_atomic

    table, counts = read_event_logs(paths)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(table, out / "tasks.parquet")
    log.info("%s: %s", out / "tasks.parquet", counts)
    return counts


def _with_counts(summary: dict[str, Any], logs, counts: dict[str, int]) -> dict[str, Any]:
    """The task-table stage's report, naming the event-log files read (not the temporary
    table) and adding what they held."""
    summary["files_read"] = [str(p) for files in log_files(logs) for p in files]
    summary["counts"] = dict(
        sorted({**summary["counts"], **{f"spark_{k}": v for k, v in counts.items()}}.items())
    )
    return summary


def spill_spark_eventlog(logs: list[Path], spill_dir: Path | str, **task_table) -> dict:
    """The `convert_part` stage of a spark-eventlog dataset: the logs as a task table (in a
    temporary folder), then the task table's own stage (spill_tasks_table; `task_table`: its
    keyword arguments)."""
    import tempfile

    from stragglers.convert.tasks_table import spill_tasks_table

    with tempfile.TemporaryDirectory(prefix="spark-task-table-") as folder:
        counts = write_task_table(logs, folder)
        summary = spill_tasks_table(folder, spill_dir, **task_table)
    return _with_counts(summary, logs, counts)


@_cleaning_up_on_failure
def convert_spark_eventlog(
    logs,
    out_dir: Path | str,
    *,
    dataset: str,
    n_shards: int,
    min_tasks: int = MIN_TASKS,
    grid_origin: float = 0.0,
    window_seconds: float = 1.0,
) -> dict:
    """Event logs -> the converted layout in `out_dir`, in one process, as convert_tasks_table
    (written under `<out_dir>.tmp`, renamed only when complete)."""
    from stragglers.convert.gather import _convert_in_one_process

    paths = [Path(p) for p in ([logs] if isinstance(logs, (str, Path)) else logs)]
    return _convert_in_one_process(
        Path(out_dir),
        KIND,
        dataset,
        n_shards,
        min_tasks,
        spill=lambda folder: spill_spark_eventlog(
            paths,
            folder,
            dataset=dataset,
            n_shards=n_shards,
            min_tasks=min_tasks,
            grid_origin=grid_origin,
            window_seconds=window_seconds,
        ),
    )


if __name__ == "__main__":
    import sys

    if len(sys.argv) < 3:
        sys.exit("usage: python -m stragglers.convert.spark_eventlog <log>... <out folder>")
    print(json.dumps(write_task_table(sys.argv[1:-1], sys.argv[-1])))
