"""The live commands against a stand-in for Spark's REST API on 127.0.0.1 (tests/live_stub.py):
the recorded table validates and holds every attempt once; the watcher's flags equal the
replay of its recording at its poll times, each raised before its task ended; bad input and a
failing API are named, counted or survived; a `kill -9` leaves a valid table and a restart
continues it. The real Spark run: tests/test_live_spark.py."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from live_stub import APP, SparkStub, StubStage, StubTask, skewed_stage
from workflow_runs import ROOT

from stragglers.convert.tasks_table import convert_tasks_table, reserved_columns
from stragglers.formats import tasks_table as table_format
from stragglers.live import record, watch
from stragglers.live.client import RestClient, Unreachable
from stragglers.live.replay import live_events, poll_times, replay_recording
from stragglers.live.spark import parse_date_ms

FAST = ["--interval", "0.2", "--lag", "0.05", "--retries", "1"]


def check_recording(folder: Path, tmp: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The recording is a valid task table (the format's reader and the conversion accept
    it); returns its tasks and usage tables as read."""
    tasks = table_format.read_tasks(folder / "tasks.csv")
    usage = table_format.read_usage(folder / "usage.csv", reserved_columns())
    convert_tasks_table(folder, tmp / "converted", dataset="x", n_shards=1, min_tasks=1)
    assert not tasks.duplicated(["job_id", "task_id", "attempt"]).any()
    # one window per attempt per poll: windows of an attempt follow one another
    for _, windows in usage.groupby(["job_id", "task_id", "attempt"]):
        starts, ends = windows["window_start"].to_numpy(), windows["window_end"].to_numpy()
        assert np.all(starts[1:] == ends[:-1])
    return tasks, usage


def stub_app() -> SparkStub:
    return SparkStub(
        [skewed_stage(0, 16, 0.2, {5, 11}, 0.3), skewed_stage(1, 12, 3.2, {3}, 0.3)],
        app_end=5.6,
    )


@pytest.mark.parametrize("method", ["NURD", "Spark-speculation"])
def test_watch_flags_equal_the_replay_of_its_recording(tmp_path, method, capsys):
    stub = stub_app()
    try:
        code = watch.main(
            [
                "--url",
                stub.url,
                "--out",
                str(tmp_path / "w"),
                "--method",
                method,
                "--min-tasks",
                "5",
            ]
            + FAST
            + (["--params", '{"multiplier": 1.5, "quantile": 0.5}'] if method != "NURD" else [])
        )
    finally:
        stub.stop()
    assert code == 0, capsys.readouterr().err
    out = tmp_path / "w"
    tasks, _ = check_recording(out, tmp_path)
    expected = {(s.stage, t.index, t.attempt) for s in stub.stages for t in s.tasks}
    seen = {
        (int(j.rpartition("_stage")[2].split(".")[0]), int(k), int(a))
        for j, k, a in tasks[["job_id", "task_id", "attempt"]].itertuples(index=False)
    }
    assert seen == expected
    speculative = {
        (s.stage, t.index, t.attempt) for s in stub.stages for t in s.tasks if t.speculative
    }
    marked = tasks[tasks["speculative"]]
    assert {
        (int(j[-3]), int(k), int(a))
        for j, k, a in marked[["job_id", "task_id", "attempt"]].itertuples(index=False)
    } == speculative
    flags = live_events(out, "flag")
    assert flags, "the run flagged nothing: the test shows nothing"
    replayed = replay_recording(out)
    assert sorted((f["job_id"], f["task"], f["poll_time"]) for f in flags) == sorted(
        replayed.itertuples(index=False, name=None)
    )
    # each flag at a poll of the run, while its task still ran
    finished = tasks[tasks["status"] == "finished"].groupby(["job_id", "task_id"])["end_time"].min()
    times = set(poll_times(out).tolist())
    for flag in flags:
        assert flag["poll_time"] in times
        assert flag["poll_time"] < finished[(flag["job_id"], str(flag["task"]))]
    ends = live_events(out, "stage_end")
    assert {e["job_id"] for e in ends if e["scored"]} == {f"{APP}_stage0.0", f"{APP}_stage1.0"}
    assert len(live_events(out, "spark_speculative")) == len(speculative)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_url_nothing_answers_is_retried_then_named(tmp_path, capsys):
    url = f"http://127.0.0.1:{_free_port()}"
    began = time.monotonic()
    code = record.main(["--url", url, "--out", str(tmp_path / "r"), "--retries", "2"])
    err = capsys.readouterr().err
    assert code == 2 and url in err and "no answer" in err and "after 3 tries" in err
    assert time.monotonic() - began >= 1.5  # backoff 0.5 s, then 1 s
    assert not (tmp_path / "r").exists()


def test_backoff_doubles():
    slept = []
    client = RestClient(f"http://127.0.0.1:{_free_port()}", retries=3, sleep=slept.append)
    with pytest.raises(Unreachable, match="after 4 tries"):
        client.get("applications")
    assert slept == [0.5, 1.0, 2.0] and client.errors["connection"] == 4


def test_an_unknown_app_is_named_and_nothing_written(tmp_path, capsys):
    stub = stub_app()
    try:
        code = record.main(["--url", stub.url, "--app", "app-nope", "--out", str(tmp_path / "r")])
    finally:
        stub.stop()
    err = capsys.readouterr().err
    assert code == 2 and "no application 'app-nope'" in err and APP in err and stub.url in err
    assert not (tmp_path / "r").exists()


def test_http_errors_mid_run_are_counted_and_retried(tmp_path, capsys):
    stub = stub_app()
    stub.failures = {"taskList": [500, 404, 500, 500], "/stages": [503]}
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        code = record.main(["--url", stub.url, "--out", str(tmp_path / "r")] + FAST)
    finally:
        stub.stop()
    assert code == 0, capsys.readouterr().err
    # the caller's signal handlers are back (pytest's, here)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers
    tasks, _ = check_recording(tmp_path / "r", tmp_path)
    assert len(tasks) == sum(len(s.tasks) for s in stub.stages)
    polls = pd.read_csv(tmp_path / "r" / "polls.csv")
    counted: dict[str, int] = {}
    for errors in polls["errors"]:
        for kind, n in json.loads(errors).items():
            counted[kind] = counted.get(kind, 0) + n
    assert counted == {"http 500": 3, "http 404": 1, "http 503": 1}


def test_an_app_ending_between_polls_finishes_cleanly(tmp_path, capsys):
    stub = SparkStub([skewed_stage(0, 8, 0.1, {2}, 0.3)])  # never says it completed
    import threading

    threading.Timer(1.5, stub.stop).start()  # the driver goes, and its UI with it
    code = record.main(["--url", stub.url, "--out", str(tmp_path / "r")] + FAST)
    err = capsys.readouterr().err
    assert code == 0 and "the application ended or its UI stopped" in err
    check_recording(tmp_path / "r", tmp_path)


def test_parse_date():
    assert parse_date_ms("1970-01-01T00:00:01.5GMT") == 1500
    assert parse_date_ms("2026-11-27T15:03:43.136GMT") % 1000 == 136


def _record_process(url: str, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "stragglers.live.record", "--url", url, "--out", str(out)] + FAST,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_polls(out: Path, n: int, process, timeout: float = 120.0) -> None:
    """Until the recorder in `process` has written `n` polls (its poll loop, with its signal
    handlers, is running): a loaded machine starts Python and pandas slowly."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1]
        polls = out / "polls.csv"
        if polls.is_file() and len(polls.read_text().splitlines()) > n:  # a header line
            return
        time.sleep(0.1)
    raise AssertionError(f"{out}: fewer than {n} polls after {timeout} s")


def test_kill_9_leaves_a_valid_table_and_a_restart_continues(tmp_path):
    # the application ends only once the first recorder is killed: under load the recorder's
    # start-up may take longer than the stage
    stub = SparkStub([skewed_stage(0, 20, 0.1, {4, 9}, 0.3)])
    out = tmp_path / "r"
    try:
        first = _record_process(stub.url, out)
        _wait_for_polls(out, 2, first)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        last_end = max(task.end for task in stub.stages[0].tasks)
        stub.app_end = max(stub.now(), last_end) + 1.0
        polls_before = len(pd.read_csv(out / "polls.csv"))
        assert polls_before >= 2
        check_recording(out, tmp_path / "a")
        second = _record_process(stub.url, out)
        _, err = second.communicate(timeout=60)
        assert second.returncode == 0, err
        assert f"({polls_before} polls there already)" in err
    finally:
        stub.stop()
    tasks, usage = check_recording(out, tmp_path / "b")
    assert len(tasks) == len(stub.stages[0].tasks)
    assert not usage.duplicated(["job_id", "task_id", "attempt", "window_start"]).any()
    assert (tasks["status"] != "").all()


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_recorder_cleanly(tmp_path, how):
    stub = SparkStub([StubStage(0, [StubTask(0, 0, 0.0, 60.0)])])
    try:
        process = _record_process(stub.url, tmp_path / "r")
        _wait_for_polls(tmp_path / "r", 2, process)
        process.send_signal(how)
        _, err = process.communicate(timeout=30)
    finally:
        stub.stop()
    assert process.returncode == 0 and f"stopped by signal {how.name}" in err
    tasks, usage = check_recording(tmp_path / "r", tmp_path)
    assert tasks["status"].tolist() == [""] and len(usage) >= 2


def test_a_folder_holding_another_table_is_not_overwritten(tmp_path, capsys):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "tasks.csv").write_text("job_id\n")
    stub = stub_app()
    try:
        code = record.main(["--url", stub.url, "--out", str(tmp_path / "r")] + FAST)
    finally:
        stub.stop()
    assert code == 2 and "not a live recording" in capsys.readouterr().err
    assert (tmp_path / "r" / "tasks.csv").read_text() == "job_id\n"


def test_polls_failing_in_a_row_stop_the_run_with_a_valid_table(tmp_path, capsys):
    stub = stub_app()
    try:
        code = record.main(["--url", stub.url, "--out", str(tmp_path / "r")] + FAST)
        assert code == 0
        stub.failures = {"/stages": [500] * 20}
        code = record.main(["--url", stub.url, "--out", str(tmp_path / "r")] + FAST)
    finally:
        stub.stop()
    err = capsys.readouterr().err
    assert code == 2 and "5 polls in a row failed" in err and "HTTP 500" in err
    check_recording(tmp_path / "r", tmp_path)


RECORDED = ROOT / "tests" / "data" / "live-spark"


def test_the_recorded_spark_application_replays_to_its_live_flags(tmp_path):
    """tests/data/live-spark: a watch of a real Spark run (tests/test_live_spark.py, NURD with
    threshold 1 s; docs/live.md's worked example) and its event log. The recording holds the
    event log's attempts; its replay at its poll times gives the flags the live run wrote."""
    from stragglers.convert.spark_eventlog import read_event_logs

    tasks, _ = check_recording(RECORDED, tmp_path)
    logged, _ = read_event_logs(RECORDED / "eventlog")
    keys = ["job_id", "task_id", "attempt"]
    assert set(tasks[keys].astype(str).itertuples(index=False)) == set(
        logged[keys].astype(str).itertuples(index=False)
    )
    assert tasks["speculative"].sum() == logged["speculative"].sum() == 1
    flags = live_events(RECORDED, "flag")
    assert len(flags) == 10
    assert sorted((f["job_id"], f["task"], f["poll_time"]) for f in flags) == sorted(
        replay_recording(RECORDED).itertuples(index=False, name=None)
    )


@pytest.mark.parametrize(
    "args,message",
    [
        (["--method", "Nope"], "no method named 'Nope'"),
        (["--method", "Oracle"], "method Oracle needs true latencies: it cannot run live"),
        (["--method", "START"], "method START needs earlier finished jobs"),
        (["--method", "NURD", "--params", '{"alpha": 7}'], "parameter 'alpha' must be"),
        (["--method", "NURD", "--params", "{bad"], "--params is not JSON"),
    ],
)
def test_a_method_that_cannot_run_is_refused_before_any_request(tmp_path, capsys, args, message):
    url = f"http://127.0.0.1:{_free_port()}"  # nothing answers: no request may be needed
    code = watch.main(["--url", url, "--out", str(tmp_path / "w"), "--retries", "0", *args])
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "w").exists()


def test_a_completed_application_is_recorded_in_one_poll(tmp_path, capsys):
    """As a History Server serves a finished application: one poll reads every stage once and
    the recording ends; each attempt has its one window, up to its end."""
    stub = SparkStub([skewed_stage(0, 10, 0.0, {3}, 0.1)], app_end=0.0)
    time.sleep(1.0)
    try:
        code = record.main(["--url", stub.url, "--app", APP, "--out", str(tmp_path / "r")] + FAST)
    finally:
        stub.stop()
    assert code == 0 and "the application has completed" in capsys.readouterr().err
    tasks, usage = check_recording(tmp_path / "r", tmp_path)
    assert len(tasks) == len(stub.stages[0].tasks) == len(usage)
    assert len(pd.read_csv(tmp_path / "r" / "polls.csv")) == 1
    merged = usage.merge(tasks, on=["job_id", "task_id", "attempt"])
    assert (merged["window_start"] == merged["start_time"]).all()
    assert (merged["window_end"] == merged["end_time"]).all()
