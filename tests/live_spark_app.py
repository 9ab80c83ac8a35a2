"""The application tests/test_live_spark.py watches (run as its own process, the driver):

    python tests/live_spark_app.py MASTER UI_PORT EVENT_LOG_DIR

One stage of 24 sleeping tasks on a standalone cluster whose second worker is slowed
(STRAGGLERS_SLOW_FACTOR in its environment, as bench/spark_eventlogs.py), partition 5 with four
times the work, speculation on (multiplier 1.5, quantile 0.5: copies soon), heartbeats every
second; then a shuffle stage; then it waits a few seconds so that a watcher's polls see the
last tasks end before the driver's UI goes.
"""

from __future__ import annotations

import os
import sys
import time

UNIT = 0.5  # seconds of work per unit


def _work(units: float) -> None:
    time.sleep(units * UNIT * float(os.environ.get("STRAGGLERS_SLOW_FACTOR", "1")))


def _skewed(index, rows):
    _work(4.0 if index == 5 else 1.0)
    yield sum(1 for _ in rows)


def _reduce(rows):
    rows = list(rows)
    _work(0.04 * len(rows))
    yield len(rows)


def main(master: str, ui_port: str, log_dir: str) -> None:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.appName("stragglers-live")
        .master(master)
        .config("spark.ui.port", ui_port)
        .config("spark.port.maxRetries", "0")  # the port the test gave, or fail
        .config("spark.executor.heartbeatInterval", "1s")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", log_dir)
        .config("spark.speculation", "true")
        .config("spark.speculation.interval", "100ms")
        .config("spark.speculation.multiplier", "1.5")
        .config("spark.speculation.quantile", "0.5")
        .config("spark.executor.memory", "512m")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    try:
        sc = spark.sparkContext
        sc.parallelize(range(240), 24).mapPartitionsWithIndex(_skewed).collect()
        keys = sc.parallelize(range(480), 12).map(lambda i: (0 if i % 3 == 0 else i % 40, i))
        keys.partitionBy(12).mapPartitions(_reduce).collect()
        time.sleep(6)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
