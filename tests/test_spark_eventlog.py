"""Spark event logs (dataset kind spark-eventlog): the real logs in tests/data/spark-eventlogs,
written by bench/spark_eventlogs.py on a standalone cluster of two hosts (one slowed), read in
every layout and codec, turned into a task table and converted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from stragglers.convert.spark_eventlog import (
    EventLogError,
    _lzf_decompress,
    convert_spark_eventlog,
    event_log_entries,
    iter_lines,
    log_files,
    read_event_logs,
)
from stragglers.formats.jobs import read_manifest
from stragglers.formats.tasks_table import read_tasks

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "data" / "spark-eventlogs"


def test_every_layout_and_codec_is_found_and_read():
    entries = event_log_entries(LOGS)
    suffixes = {name.rsplit(".", 1)[-1] if "." in name else "plain" for name in entries}
    assert {"lz4", "snappy", "lzf", "plain"} <= suffixes
    rolling = [name for name in entries if name.startswith("eventlog_v2_")]
    assert len(rolling) == 1
    apps = log_files(LOGS)
    assert len(apps) == len(entries) == 5
    (parts,) = [files for files in apps if files[0].parent.name == rolling[0]]
    assert [p.name.split("_")[1] for p in parts] == ["1"] and parts[0].suffix == ".zstd"
    # each file starts with Spark's log-start event, whatever its codec
    for files in apps:
        first = json.loads(next(iter_lines(files[0])))
        assert first["Event"] == "SparkListenerLogStart", files[0]


def _plain_log() -> Path:
    (plain,) = [LOGS / n for n in event_log_entries(LOGS) if "." not in n and (LOGS / n).is_file()]
    return plain


def test_attempts_match_the_plain_logs_events():
    """The plain log's rows against its events read with json, one by one."""
    plain = _plain_log()
    table, counts = read_event_logs([plain])
    events = [json.loads(line) for line in plain.read_text().splitlines()]
    app_id = next(e["App ID"] for e in events if e["Event"] == "SparkListenerApplicationStart")
    starts = [e for e in events if e["Event"] == "SparkListenerTaskStart"]
    ends = {e["Task Info"]["Task ID"]: e for e in events if e["Event"] == "SparkListenerTaskEnd"}
    assert len(table) == len(starts) == counts["attempts"]
    for row, start in zip(table.itertuples(), starts, strict=True):
        info = start["Task Info"]
        assert row.job_id == f"{app_id}_stage{start['Stage ID']}.{start['Stage Attempt ID']}"
        assert (row.task_id, row.attempt) == (info["Index"], info["Attempt"])
        assert row.start_time == info["Launch Time"] / 1000
        assert row.machine_id == info["Host"] and row.speculative == info["Speculative"]
        end = ends.get(info["Task ID"])
        if end is None:
            assert np.isnan(row.end_time) and row.status is None
        else:
            assert row.end_time == end["Task Info"]["Finish Time"] / 1000
            reason = end["Task End Reason"]["Reason"]
            assert row.status == {"Success": "finished", "TaskKilled": "killed"}.get(
                reason, "failed"
            )


def test_the_logs_hold_skew_speculation_and_a_retry():
    table, counts = read_event_logs(LOGS)
    assert counts["applications"] == 5
    # speculative copies on another host than the original's, and the killed losers
    copies = table[table["speculative"]]
    assert len(copies) >= 3
    for copy in copies.itertuples():
        original = table[
            (table["job_id"] == copy.job_id)
            & (table["task_id"] == copy.task_id)
            & ~table["speculative"]
        ]
        assert (original["machine_id"] != copy.machine_id).all()
    assert (table["status"] == "killed").sum() >= 2
    # the flaky stage: partition 2 fails once, then finishes (apps that ran all stages)
    flaky = table[table["job_id"].str.endswith("_stage3.0") & (table["task_id"] == 2)]
    by_app = flaky.sort_values("attempt").groupby("job_id")["status"].agg(list)
    assert len(by_app) == 2 and all(s[:2] == ["failed", "finished"] for s in by_app)
    # the slowed host's tasks of the first stage take longer than the other host's
    first = table[table["job_id"].str.endswith("_stage0.0") & (table["status"] == "finished")]
    duration = first["end_time"] - first["start_time"]
    by_host = duration.groupby(first["machine_id"]).median()
    assert by_host["127.0.0.3"] > 1.5 * by_host["127.0.0.2"]


def test_the_task_table_passes_the_formats_validation(tmp_path):
    table, _ = read_event_logs(LOGS)
    table.to_parquet(tmp_path / "tasks.parquet", index=False)
    validated = read_tasks(tmp_path / "tasks.parquet")
    assert len(validated) == len(table)


def test_conversion_features_are_known_at_launch(tmp_path):
    out = tmp_path / "converted"
    summary = convert_spark_eventlog(
        LOGS, out, dataset="spark", n_shards=2, min_tasks=8, grid_origin=0.0, window_seconds=0.5
    )
    manifest = read_manifest(out)
    # every stage attempt has >= 8 tasks: four stages in each of the two full applications,
    # the first stage only in the other three
    assert len(manifest) == 11
    assert summary["counts"]["spark_applications"] == 5
    assert len(summary["files_read"]) == 5 and all(
        Path(f).is_relative_to(LOGS) for f in summary["files_read"]
    )
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["spark_attempts"] == report["counts"]["attempt_rows_read"]
    assert report["features"] == [
        "request_locality",
        "machine_load",
        "evictions_so_far",
        "failures_so_far",
    ]
    assert not Path(f"{out}.tmp").exists()


def test_a_log_still_being_written(tmp_path):
    """An `.inprogress` log cut in the middle of a line: the complete lines are read, and the
    attempts whose end event is not written yet are running (no end, no status)."""
    text = _plain_log().read_bytes()
    cut = text.index(b'"SparkListenerTaskEnd"', len(text) // 2) + 40
    (tmp_path / "app-1.inprogress").write_bytes(text[:cut])
    table, counts = read_event_logs(tmp_path)
    whole, _ = read_event_logs([_plain_log()])
    assert counts["applications"] == 1 and 0 < len(table) <= len(whole)
    keys = ["job_id", "task_id", "attempt", "start_time"]
    pd.testing.assert_frame_equal(table[keys], whole[keys].iloc[: len(table)])
    running = table["status"].isna().to_numpy()
    assert running.any() and table.loc[running, "end_time"].isna().all()
    ended = whole.iloc[: len(table)][~running]
    assert (table[~running]["status"].to_numpy() == ended["status"].to_numpy()).all()


def test_lzf_by_hand():
    # a literal run "abc" (control 2: 3 bytes), then a back-reference: control 0b001_00000
    # (length 1 + 2 = 3, offset high bits 0) and offset byte 2: from 2 + 1 = 3 bytes back
    data = bytes([2]) + b"abc" + bytes([0b0010_0000, 2])
    assert _lzf_decompress(data, 6) == b"abcabc"
    # an overlapping reference repeats the last byte: 1 back, length 7 + 3 (the extra
    # length byte) + 2 = 12
    data = bytes([0]) + b"x" + bytes([0b1110_0000, 3, 0])
    assert _lzf_decompress(data, 13) == b"x" * 13


def test_bad_logs_are_named(tmp_path):
    with pytest.raises(EventLogError, match="no Spark event log"):
        event_log_entries(tmp_path)
    (tmp_path / "app-1").write_text(
        '{"Event":"SparkListenerLogStart"}\n{"Event":"SparkListenerTaskStart","Stage ID":0}\n'
    )
    with pytest.raises(EventLogError, match=r"app-1: line 2: not a Spark listener event"):
        read_event_logs(tmp_path)
    (tmp_path / "app-1").unlink()
    (tmp_path / "app-2.zstd").write_bytes(b"not zstd at all")
    with pytest.raises(EventLogError, match=r"app-2.zstd: cannot be read"):
        read_event_logs(tmp_path)
    (tmp_path / "app-2.zstd").unlink()
    lz4 = next(p for p in LOGS.iterdir() if p.suffix == ".lz4")
    (tmp_path / "app-3.lz4").write_bytes(lz4.read_bytes()[:500])
    with pytest.raises(EventLogError, match=r"app-3.lz4: truncated"):
        read_event_logs(tmp_path)


def _java_missing() -> str | None:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime (Debian: openjdk-17-jre-headless)"
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed"
    return None


@pytest.mark.slow
@pytest.mark.skipif(_java_missing() is not None, reason=str(_java_missing()))
def test_the_script_regenerates_readable_logs(tmp_path):
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "spark_eventlogs.py"), str(tmp_path), "--quick"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    (entry,) = event_log_entries(tmp_path)
    assert entry.startswith("eventlog_v2_")  # Spark 4's default layout
    table, counts = read_event_logs(tmp_path)
    assert counts["applications"] == 1
    assert sorted(table.loc[table["status"] == "finished", "task_id"].unique()) == list(range(8))
    assert isinstance(table, pd.DataFrame)
