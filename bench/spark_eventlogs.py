"""Write real Spark event logs for the `spark-eventlog` dataset kind's tests.

    python bench/spark_eventlogs.py OUT_DIR               # standalone cluster, every layout
    python bench/spark_eventlogs.py OUT_DIR --quick       # one small app on local-cluster

Runs a few PySpark jobs with a skewed partition and an artificially slowed executor, with
event logging and speculation on, and leaves their event logs in OUT_DIR. The default mode
starts a standalone master on 127.0.0.1 and two one-core workers on 127.0.0.2 and 127.0.0.3:
Spark never launches a speculative copy on a host that already runs the task, so two hosts are
needed for real speculative attempts (`local-cluster` has one). Every task on the worker of
127.0.0.3 sleeps `SLOW_FACTOR` times longer (the worker's environment reaches its executor's
Python workers). One application per event-log layout Spark writes:

- `eventlog_v2_<app id>/events_1_<app id>.zstd`: Spark 4's default (rolling, zstd);
- `<app id>`: a single plain JSON-lines file;
- `<app id>.lz4`, `.snappy`, `.lzf`: a single file in each of Spark's other codecs.

The plain, snappy and lzf applications run the first stage only, to keep the test data small.

Each application runs three stages: 24 sleeping tasks, partition 5 four times the others'
work (skew); a shuffle whose reducers sleep in proportion to their records (one key holds a
third of them); and 12 tasks of which partition 2 fails on its first attempt (a retry).
Needs PySpark (`pip install pyspark`) and a Java runtime (Debian: openjdk-17-jre-headless).
The logs in tests/data/spark-eventlogs/ were written by this script; tests/test_spark_eventlog.py
reruns it (--quick) where Java is installed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SLOW_FACTOR = 4.0  # the slowed executor's tasks run this many times longer
BASE_SECONDS = 0.15  # one unit of work
MASTER_HOST, WORKER_HOSTS = "127.0.0.1", ("127.0.0.2", "127.0.0.3")

LAYOUTS = {
    "rolling-zstd": {
        "spark.eventLog.rolling.enabled": "true",
        "spark.eventLog.compress": "true",
        "spark.eventLog.compression.codec": "zstd",
    },
    "plain": {"spark.eventLog.rolling.enabled": "false", "spark.eventLog.compress": "false"},
    **{
        codec: {
            "spark.eventLog.rolling.enabled": "false",
            "spark.eventLog.compress": "true",
            "spark.eventLog.compression.codec": codec,
        }
        for codec in ("lz4", "snappy", "lzf")
    },
}
SMALL = ("plain", "snappy", "lzf")  # the first stage only: small logs that prove the layout


def _work(units: float) -> None:
    """Sleep `units` of work, SLOW_FACTOR times longer on the slowed worker."""
    factor = float(os.environ.get("STRAGGLERS_SLOW_FACTOR", "1"))
    time.sleep(units * BASE_SECONDS * factor)


def _skewed_partition(index, rows):
    _work(4.0 if index == 5 else 1.0)
    yield sum(1 for _ in rows)


def _reduce_partition(rows):
    rows = list(rows)
    _work(0.05 * len(rows))
    yield len(rows)


def _flaky_partition(index, rows):
    from pyspark import TaskContext

    if index == 2 and TaskContext.get().attemptNumber() == 0:
        raise RuntimeError("first attempt of partition 2 fails (a deliberate failure)")
    _work(1.0)
    yield sum(1 for _ in rows)


def run_app(master: str, log_dir: Path, layout: str, quick: bool) -> None:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.appName(f"stragglers-{layout}")
        .master(master)
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", log_dir.resolve().as_uri())
        .config("spark.speculation", "true")
        .config("spark.speculation.interval", "100ms")
        # Spark 3's multiplier and a low quantile: copies sooner than with Spark 4's 3 / 0.9
        .config("spark.speculation.multiplier", "1.5")
        .config("spark.speculation.quantile", "0.5")
        .config("spark.executor.memory", "512m")
        .config("spark.task.maxFailures", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.python.worker.reuse", "true")
    )
    for key, value in LAYOUTS[layout].items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    sc = spark.sparkContext
    try:
        n = 8 if quick else 24
        sc.parallelize(range(n * 10), n).mapPartitionsWithIndex(_skewed_partition).collect()
        if not quick and layout not in SMALL:
            keys = sc.parallelize(range(600), 12).map(lambda i: (0 if i % 3 == 0 else i % 40, i))
            keys.partitionBy(8).mapPartitions(_reduce_partition).collect()
            sc.parallelize(range(120), 12).mapPartitionsWithIndex(_flaky_partition).collect()
    finally:
        spark.stop()


def _spark_class(spark_home: Path, klass: str, *args: str, env: dict, log: Path):
    return subprocess.Popen(
        [str(spark_home / "bin" / "spark-class"), klass, *args],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )


def _wait_for(path: Path, text: str, count: int, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text(errors="replace").count(text) >= count:
            return
        time.sleep(0.5)
    raise RuntimeError(f"{path}: {text!r} not seen {count} times in {seconds:.0f} s")


def standalone(spark_home: Path, work: Path):
    """Start a master and two one-core workers (127.0.0.3 slowed); returns (url, processes)."""
    env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": MASTER_HOST}
    master_log = work / "master.log"
    processes = [
        _spark_class(
            spark_home,
            "org.apache.spark.deploy.master.Master",
            "--host",
            MASTER_HOST,
            "--port",
            "7077",
            "--webui-port",
            "18080",
            env=env,
            log=master_log,
        )
    ]
    url = f"spark://{MASTER_HOST}:7077"
    _wait_for(master_log, "I have been elected leader", 1)
    for port, host in enumerate(WORKER_HOSTS, start=18081):
        worker_env = {**env, "SPARK_LOCAL_IP": host, "SPARK_WORKER_DIR": str(work / host)}
        if host == WORKER_HOSTS[-1]:
            worker_env["STRAGGLERS_SLOW_FACTOR"] = str(SLOW_FACTOR)
        processes.append(
            _spark_class(
                spark_home,
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                host,
                "--cores",
                "1",
                "--memory",
                "1g",
                "--webui-port",
                str(port),
                url,
                env=worker_env,
                log=work / f"worker-{host}.log",
            )
        )
    _wait_for(master_log, "Registering worker", len(WORKER_HOSTS))
    return url, processes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder for the event logs (created)")
    parser.add_argument(
        "--quick", action="store_true", help="one small app on local-cluster[2,1,1024]"
    )
    parser.add_argument(
        "--layouts", nargs="+", choices=list(LAYOUTS), default=list(LAYOUTS), help="which logs"
    )
    args = parser.parse_args(argv)
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        sys.exit("no Java runtime: install one (Debian: openjdk-17-jre-headless)")
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    os.environ.setdefault("SPARK_HOME", str(spark_home))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.quick:
        # one host: speculative copies are marked but cannot launch (no other host)
        run_app("local-cluster[2,1,1024]", args.out, "rolling-zstd", quick=True)
        return
    with tempfile.TemporaryDirectory(prefix="spark-standalone-") as tmp:
        url, processes = standalone(spark_home, Path(tmp))
        try:
            for layout in args.layouts:
                run_app(url, args.out, layout, quick=False)
        finally:
            for process in reversed(processes):
                process.terminate()
                process.wait(timeout=60)


if __name__ == "__main__":
    main()
