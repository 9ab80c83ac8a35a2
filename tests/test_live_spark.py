"""The live watcher on a real Spark 4 application: a standalone master and two one-core
workers on 127.0.0.2 and 127.0.0.3 (Spark never copies a task onto a host already running it),
the second slowed, a skewed partition, speculation on. The recorder and the watcher attach to
the running application's UI; then: both recorded tables validate, hold every task attempt of
the event log once with its speculative mark, the watcher's flags equal the replay of its
recording, and each flag came at a poll before its task ended.

With STRAGGLERS_LIVE_SAVE=DIR, a passing run's watch folder and its event log (DIR/eventlog)
replace DIR: tests/data/live-spark/ was written so (docs/live.md).

Skipped with the reason where Java or PySpark is missing, unless STRAGGLERS_REQUIRE_SPARK=1:
then it fails. Every Spark process is started in its own session and killed by its group at
teardown.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from test_spark_eventlog import _java_missing as spark_missing
from workflow_runs import ROOT

from stragglers.convert.spark_eventlog import read_event_logs
from stragglers.formats import tasks_table as table_format
from stragglers.live import watch
from stragglers.live.replay import live_events, poll_times, replay_recording

HOSTS = ("127.0.0.2", "127.0.0.3")
SLOW_FACTOR = 4.0


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _wait_for(path: Path, text: str, count: int, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text(errors="replace").count(text) >= count:
            return
        time.sleep(0.3)
    raise RuntimeError(f"{path}: {text!r} not seen {count} times in {seconds:.0f} s")


@pytest.fixture
def spark_cluster(tmp_path):
    """A standalone master and two one-core workers (127.0.0.3 slowed); yields the master URL
    and a function starting more processes that the teardown ends too."""
    reason = spark_missing()
    if reason:
        if os.environ.get("STRAGGLERS_REQUIRE_SPARK") == "1":
            pytest.fail(f"STRAGGLERS_REQUIRE_SPARK=1 but Spark cannot run here: {reason}")
        pytest.skip(reason)
    import pyspark

    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable}
    processes: list[subprocess.Popen] = []

    def start(command, log: Path, **extra) -> subprocess.Popen:
        process = subprocess.Popen(
            command,
            env={**env, **extra},
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: the teardown ends its children too
        )
        processes.append(process)
        return process

    def spark_class(klass, *args, log, **extra):
        return start([str(home / "bin" / "spark-class"), klass, *args], log, **extra)

    try:
        port = _free_port()
        master_log = tmp_path / "master.log"
        spark_class(
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(_free_port()),
            log=master_log, SPARK_LOCAL_IP="127.0.0.1",
        )  # fmt: skip
        _wait_for(master_log, "I have been elected leader", 1)
        url = f"spark://127.0.0.1:{port}"
        for host in HOSTS:
            slow = {"STRAGGLERS_SLOW_FACTOR": str(SLOW_FACTOR)} if host == HOSTS[-1] else {}
            spark_class(
                "org.apache.spark.deploy.worker.Worker",
                "--host", host, "--cores", "1", "--memory", "1g",
                "--webui-port", str(_free_port()), url,
                log=tmp_path / f"worker-{host}.log", SPARK_LOCAL_IP=host,
                SPARK_WORKER_DIR=str(tmp_path / host), **slow,
            )  # fmt: skip
        _wait_for(master_log, "Registering worker", len(HOSTS))
        yield url, start, env
    finally:
        for process in reversed(processes):
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)


def _wait_for_ui(url: str, driver: subprocess.Popen, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if driver.poll() is not None:
            raise RuntimeError(f"the driver exited ({driver.returncode}) before its UI answered")
        try:
            # while the driver starts, the UI answers a plain-text "Spark is starting up"
            json.loads(urllib.request.urlopen(f"{url}/api/v1/applications", timeout=2).read())
            return
        except (OSError, ValueError):
            time.sleep(0.3)
    raise RuntimeError(f"{url}: the driver's UI did not answer in {seconds:.0f} s")


@pytest.mark.slow
@pytest.mark.spark
def test_watch_a_running_spark_application(spark_cluster, tmp_path, capsys):
    master, start, env = spark_cluster
    began = time.monotonic()
    ui_port, logs = _free_port(), tmp_path / "eventlogs"
    logs.mkdir()
    driver = start(
        [
            sys.executable,
            str(ROOT / "tests" / "live_spark_app.py"),
            master,
            str(ui_port),
            logs.as_uri(),
        ],
        tmp_path / "driver.log",
        SPARK_LOCAL_IP="127.0.0.1",
    )
    ui = f"http://127.0.0.1:{ui_port}"
    _wait_for_ui(ui, driver)
    attach = ["--url", ui, "--interval", "1", "--lag", "0.5", "--retries", "2"]
    recorder = start(
        [sys.executable, "-m", "stragglers.live.record", *attach, "--out", str(tmp_path / "rec")],
        tmp_path / "recorder.log",
        PYTHONPATH=str(ROOT),
    )
    out = tmp_path / "watch"
    # the threshold given (1 s), not the default, estimated at a stage's first prediction
    # from its first tasks only: NURD may flag nothing with it, leaving the equality below
    # nothing to compare
    code = watch.main(
        [*attach, "--out", str(out), "--method", "NURD", "--min-tasks", "10", "--threshold", "1"]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    assert driver.wait(timeout=120) == 0, (tmp_path / "driver.log").read_text()[-3000:]
    assert recorder.wait(timeout=120) == 0, (tmp_path / "recorder.log").read_text()[-3000:]
    seconds = time.monotonic() - began

    logged, _ = read_event_logs(logs)
    logged = logged.astype({"job_id": str, "task_id": str})
    logged_keys = set(logged[["job_id", "task_id", "attempt"]].astype(str).itertuples(index=False))
    copies = logged[logged["speculative"].astype(bool)]
    assert len(copies), "Spark launched no speculative copy: the run shows nothing"
    for folder in (out, tmp_path / "rec"):
        tasks = table_format.read_tasks(folder / "tasks.csv")
        table_format.read_usage(folder / "usage.csv", set())
        keys = tasks[["job_id", "task_id", "attempt"]].astype(str).itertuples(index=False)
        assert set(keys) == logged_keys and len(tasks) == len(logged)
        marked = tasks[tasks["speculative"]][["job_id", "task_id", "attempt"]].astype(str)
        assert set(marked.itertuples(index=False)) == set(
            copies[["job_id", "task_id", "attempt"]].astype(str).itertuples(index=False)
        )
    flags = live_events(out, "flag")
    assert flags, "NURD flagged nothing: the equality below compares nothing"
    replayed = replay_recording(out)
    assert sorted((f["job_id"], f["task"], f["poll_time"]) for f in flags) == sorted(
        replayed.itertuples(index=False, name=None)
    )
    ends = logged[logged["status"] == "finished"].groupby(["job_id", "task_id"])["end_time"].min()
    times = set(poll_times(out).tolist())
    for flag in flags:
        assert flag["poll_time"] in times
        assert flag["poll_time"] < ends[(flag["job_id"], str(flag["task"]))]
    scored = [e for e in live_events(out, "stage_end") if e["scored"]]
    watched = logged.groupby("job_id")["task_id"].nunique() >= 10  # --min-tasks
    assert len(scored) == watched.sum() >= 2
    print(f"Spark live run: {seconds:.0f} s, {len(flags)} flags, stages {scored}", file=sys.stderr)
    save = os.environ.get("STRAGGLERS_LIVE_SAVE")
    if save:
        shutil.rmtree(save, ignore_errors=True)
        shutil.copytree(out, save)
        shutil.copytree(logs, Path(save) / "eventlog", ignore=shutil.ignore_patterns("*.crc"))
