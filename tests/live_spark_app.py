"""The application tests/test_live_spark.py watches (run as its own process, the driver):

    python tests/live_spark_app.py MASTER UI_PORT EVENT_LOG_DIR

A JVM-side workload whose tasks read files, so that the running task metrics the executors'
heartbeats report grow while a task runs (docs/live.md). The driver writes FILES CSV files
(id, key, weight, payload; ROWS rows each) into a temporary folder, file 5's rows with weight
SKEW (four times the work per record; the others 1: equal files, so that the skewed partition
is not the largest, which Spark would read first). Stage 0 is a warm-up: WARM_UP tasks read
small files the same way, so that the executors' JVMs load and compile the code before the
measured stages (on a cold executor the first task reads nothing for seconds). Then one
DataFrame action, two stages:

- stage 1, FILES tasks (one file each: `spark.sql.files.openCostInBytes` as large as
  `maxPartitionBytes`): reads its file (input records and bytes read grow as it goes), sleeps
  2 x weight ms every 10 records in a SQL expression (`java_method('java.lang.Thread',
  'sleep', ...)`: the JVM's own time, not CPU, on a shared machine), keeps every other record
  and repartitions them by key into REDUCERS partitions (key 0 holds a third of the records);
- stage 2, REDUCERS tasks: reads its shuffle blocks (shuffle records and bytes read grow as
  the blocks are consumed), sleeps 2 ms every 20 records it reads (every 40th id: even ids
  were kept), writes nothing (`noop`).

The second worker is slowed as in bench/spark_eventlogs.py: STRAGGLERS_SLOW_FACTOR in its
environment reaches its executor's JVM, and the SQL expression reads it
(`java.lang.System.getenv`) and sleeps that many times longer. Speculation on (multiplier 1.5,
quantile 0.5: copies soon), heartbeats every second, adaptive execution off (it would merge
the reduce partitions). Then it waits a few seconds so that a watcher's polls see the last
tasks end before the driver's UI goes.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

FILES, ROWS, SKEW = 12, 6000, 4  # input files, rows per file, the skewed file's weight
REDUCERS = 12
WARM_UP = 4  # tasks of the warm-up stage (below the watcher's --min-tasks: not watched)
KEYS = 40  # key 0: every third row; the others spread over keys 1 to KEYS - 1

# 1, or STRAGGLERS_SLOW_FACTOR on the slowed worker (its executor inherits the environment)
# (java_method returns a Java null as the string 'null')
GETENV = "java_method('java.lang.System', 'getenv', 'STRAGGLERS_SLOW_FACTOR')"
FACTOR = f"CAST(CAST(coalesce(nullif({GETENV}, 'null'), '1') AS DOUBLE) AS BIGINT)"


def sleep_every(records: int, ms: str = "2") -> str:
    """A SQL expression sleeping `ms` (an expression) x FACTOR ms on every `records`-th id
    (never null)."""
    call = f"java_method('java.lang.Thread', 'sleep', {ms} * {FACTOR})"
    return f"IF(id % {records} = 0, coalesce({call}, 'slept'), 'v')"


def write_inputs(folder: Path, files: int, rows_per_file: int) -> list[str]:
    """`files` CSV files of id,key,weight,payload rows; file 5's weight is SKEW."""
    paths = []
    for index in range(files):
        weight = SKEW if index == 5 else 1
        path = folder / f"{folder.name}-{index:02d}.csv"
        with path.open("w") as out:
            for i in range(rows_per_file):
                key = 0 if i % 3 == 0 else 1 + (i // 3) % (KEYS - 1)
                out.write(f"{i},{key},{weight},{index:02d}-{i:06d}-{'x' * 24}\n")
        paths.append(path.as_uri())
    return paths


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
        .config("spark.sql.adaptive.enabled", "false")
        # one file per task: opening a file costs as much as a whole split
        .config("spark.sql.files.maxPartitionBytes", str(64 << 20))
        .config("spark.sql.files.openCostInBytes", str(64 << 20))
        .getOrCreate()
    )
    try:
        with tempfile.TemporaryDirectory(prefix="stragglers-live-input-") as folder:
            schema = "id LONG, key INT, weight INT, payload STRING"
            (Path(folder) / "warm").mkdir()
            (Path(folder) / "part").mkdir()
            warm = spark.read.csv(write_inputs(Path(folder) / "warm", WARM_UP, 200), schema=schema)
            warm.selectExpr(f"{sleep_every(10)} AS slept").write.format("noop").mode(
                "overwrite"
            ).save()
            rows = spark.read.csv(write_inputs(Path(folder) / "part", FILES, ROWS), schema=schema)
            mapped = rows.selectExpr("id", "key", f"{sleep_every(10, '2 * weight')} AS slept")
            kept = mapped.where("id % 2 = 0")
            # `slept` goes through the shuffle into the output: never pruned, so evaluated
            shuffled = kept.repartition(REDUCERS, "key")
            reduced = shuffled.selectExpr(f"concat(slept, {sleep_every(40)}) AS slept")
            reduced.write.format("noop").mode("overwrite").save()
        time.sleep(6)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
