"""The task table (dataset kind tasks-table): hand-computed conversions, the same result from
CSV, gzip CSV and Parquet, every bad input named by file, row and column with nothing
complete-looking left behind, and one snakemake run from a config shaped like
config/google-2011-shared.yaml."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from stragglers.convert.layout import raw_layout
from stragglers.convert.tasks_table import convert_tasks_table, count_at_or_before
from stragglers.formats.datasets import dataset_features, last_columns
from stragglers.formats.jobs import iter_shard_jobs, read_manifest
from stragglers.formats.tasks_table import TaskTableError

ROOT = Path(__file__).resolve().parents[1]

# job A: task 0 evicted once, task 1 failed once, task 2 with a killed speculative copy, task 3
# never finished (dropped); job B has a task still running (dropped: incomplete); job C has one
# finished task (below min_tasks = 2)
ATTEMPTS = [
    # job_id, task_id, attempt, start, end, status, machine, request_cpu, speculative
    ("A", 0, 0, 10.0, 20.0, "evicted", "m1", 1.0, False),
    ("A", 0, 1, 25.0, 70.0, "finished", "m2", 2.0, False),
    ("A", 1, 0, 12.0, 30.0, "failed", "m1", 1.0, False),
    ("A", 1, 1, 30.0, 40.0, "finished", "m1", 1.0, False),
    ("A", 2, 0, 15.0, 50.0, "finished", "m2", 0.5, False),
    ("A", 2, 1, 30.0, 45.0, "killed", "m3", 0.5, True),
    ("A", 3, 0, 11.0, 19.0, "killed", "m1", 1.0, False),
    ("B", 0, 0, 10.0, 20.0, "finished", "m1", 1.0, False),
    ("B", 1, 0, 10.0, None, None, "m2", 1.0, False),
    ("C", 0, 0, 10.0, 20.0, "finished", "m3", 1.0, False),
]
COLUMNS = [
    "job_id",
    "task_id",
    "attempt",
    "start_time",
    "end_time",
    "status",
    "machine_id",
    "request_cpu",
    "speculative",
]


def attempts_frame() -> pd.DataFrame:
    return pd.DataFrame(ATTEMPTS, columns=COLUMNS)


def write(frame: pd.DataFrame, folder: Path, name: str = "tasks", suffix: str = ".csv") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}{suffix}"
    if suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    return path


def convert(raw: Path, out: Path, **kwargs):
    settings = {"dataset": "t", "n_shards": 2, "min_tasks": 2, "grid_origin": 0.0}
    settings["window_seconds"] = 10.0
    return convert_tasks_table(raw, out, **{**settings, **kwargs})


def only_job(out: Path):
    jobs = list(iter_shard_jobs(out, "tasks-table", None))
    assert len(jobs) == 1
    return jobs[0]


def test_count_at_or_before_against_a_loop():
    rng = np.random.default_rng(0)
    event_key, event_time = rng.integers(0, 5, 200), rng.integers(0, 20, 200) / 2
    key, time = rng.integers(0, 6, 300), rng.integers(0, 20, 300) / 2
    expected = [np.sum((event_key == k) & (event_time <= t)) for k, t in zip(key, time)]
    assert count_at_or_before(event_key, event_time, key, time).tolist() == expected


def test_hand_computed_conversion(tmp_path):
    write(attempts_frame(), tmp_path / "raw")
    summary = convert(tmp_path / "raw", tmp_path / "out")
    counts = summary["counts"]
    assert counts["jobs_kept"] == 1 and counts["tasks_kept"] == 3
    assert counts["tasks_not_finished"] == 1  # A/3: killed, never finished
    assert counts["tasks_running"] == 1  # B/1
    assert counts["jobs_dropped_incomplete_in_log"] == 1  # B
    assert counts["jobs_dropped_below_min_tasks"] == 1  # C
    features = ["request_cpu", "machine_load", "evictions_so_far", "failures_so_far"]
    assert summary["features"] == features
    assert [f.column for f in dataset_features("tasks-table", tmp_path / "out")] == features
    assert list(last_columns("tasks-table", tmp_path / "out")) == [False, False, True, True]
    job = only_job(tmp_path / "out")
    # latency: first attempt's start to the finished attempt's end; tasks by start
    assert list(job.task_id) == ["0", "1", "2"]
    assert job.task_start.tolist() == [10.0, 12.0, 15.0]
    assert job.latency.tolist() == [60.0, 28.0, 35.0]
    assert job.machine_id.tolist() == ["m2", "m1", "m2"]
    assert job.evictions.tolist() == [1, 0, 0] and job.failures.tolist() == [0, 1, 0]
    # task 0's life [10, 70] on the 10 s grid: 6 windows, each read at its end
    rows = np.flatnonzero(job.window_task == 0)
    assert job.window_start[rows].tolist() == [10, 20, 30, 40, 50, 60]
    assert job.window_end[rows].tolist() == [20, 30, 40, 50, 60, 70]
    values = job.window_features[rows]
    # request: the latest attempt started by the window's end (attempt 1 from 25 s)
    assert values[:, 0].tolist() == [1.0, 2.0, 2.0, 2.0, 2.0, 2.0]
    # EV: the eviction ends at 20 s, so it counts from the first window (read at 20 s)
    assert values[:, 2].tolist() == [1, 1, 1, 1, 1, 1]
    assert values[:, 3].tolist() == [0] * 6
    # machine load: at 20 s task 0 is on m1, where only A/1's attempt 0 [12, 30) runs (its
    # own attempt ended at 20, A/3's at 19); at 30 s on m2: A/0/1 [25, 70), A/2/0 [15, 50)
    # and job B's attempt still running (every job of the table counts)
    assert values[:2, 1].tolist() == [1.0, 3.0]
    # task 1: failed attempt ends at 30: FL is 0 at 20 s, 1 from 30 s
    rows = np.flatnonzero(job.window_task == 1)
    assert job.window_features[rows, 3].tolist() == [0, 1, 1]


@pytest.mark.parametrize("suffix", [".csv.gz", ".parquet"])
def test_csv_gzip_and_parquet_convert_alike(tmp_path, suffix):
    write(attempts_frame(), tmp_path / "csv")
    write(attempts_frame(), tmp_path / "other", suffix=suffix)
    convert(tmp_path / "csv", tmp_path / "a")
    convert(tmp_path / "other", tmp_path / "b")
    a, b = only_job(tmp_path / "a"), only_job(tmp_path / "b")
    for name in ("task_id", "latency", "machine_id", "window_start", "window_features"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def test_usage_table_windows_and_counts(tmp_path):
    frame = attempts_frame()
    usage = pd.DataFrame(
        [
            # job, task, attempt, window_start, window_end, cpu
            ("A", 0, 0, 10.0, 20.0, 0.4),
            ("A", 0, 1, 25.0, 40.0, 0.8),
            ("A", 0, 1, 40.0, 40.0, 0.9),  # zero length: skipped
            ("A", 0, 1, 60.0, 80.0, 0.9),  # beyond the task's end (70): skipped
            ("A", 1, 1, 30.0, 40.0, 0.3),
            ("A", 2, 0, 15.0, 50.0, 0.2),
            ("C", 0, 0, 10.0, 20.0, 0.1),  # a dropped job's
        ],
        columns=["job_id", "task_id", "attempt", "window_start", "window_end", "cpu"],
    )
    usage["available_from"] = [20.0, 35.0, 40.0, 80.0, 40.0, 15.0, 20.0]
    write(frame, tmp_path / "raw")
    write(usage, tmp_path / "raw", "usage", ".csv.gz")
    summary = convert(tmp_path / "raw", tmp_path / "out")
    assert summary["features"] == ["request_cpu", "cpu", "evictions_so_far", "failures_so_far"]
    counts = summary["counts"]
    assert counts["usage_windows_zero_length"] == 1
    assert counts["usage_windows_outside_task_life"] == 1
    assert counts["usage_rows_of_dropped_tasks"] == 1
    job = only_job(tmp_path / "out")
    order = np.lexsort((job.window_start, job.window_task))
    assert job.available_from[order].tolist() == [20.0, 35.0, 40.0, 15.0]
    # the request of the window's own attempt; EV counted at available_from
    assert job.window_features[order].tolist() == [
        [1.0, 0.4, 1.0, 0.0],
        [2.0, 0.8, 1.0, 0.0],
        [1.0, 0.3, 0.0, 1.0],
        [0.5, 0.2, 0.0, 0.0],
    ]


def bad_tasks(case: str) -> pd.DataFrame:
    frame = attempts_frame().astype({"end_time": object, "request_cpu": object})
    if case == "missing column":
        return frame.drop(columns="start_time")
    if case == "end before start":
        frame.loc[4, "end_time"] = 5.0
    elif case == "overlap":
        frame.loc[1, "start_time"] = 18.0  # A/0 attempt 1 starts before attempt 0 ends (20)
    elif case == "text in a numeric column":
        frame.loc[2, "request_cpu"] = "two"
    elif case == "repeated attempt":
        frame.loc[3, "attempt"] = 0
    elif case == "status without end":
        frame.loc[6, "end_time"] = None
    return frame


BAD = {
    # case -> (row, column) the error must name; rows count from 1 below the header
    "missing column": (None, "start_time"),
    "end before start": (5, "end_time"),
    "overlap": (2, "start_time"),
    "text in a numeric column": (3, "request_cpu"),
    "repeated attempt": (4, "attempt"),
    "status without end": (7, "end_time"),
}


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_bad_tasks_named_and_nothing_left(tmp_path, case, suffix):
    frame = bad_tasks(case)
    if suffix == ".parquet" and case == "text in a numeric column":
        frame["request_cpu"] = frame["request_cpu"].astype(str)
    path = write(frame, tmp_path / "raw", suffix=suffix)
    out = tmp_path / "out"
    with pytest.raises(TaskTableError) as error:
        convert(tmp_path / "raw", out)
    message = str(error.value)
    row, column = BAD[case]
    assert str(path) in message and f"column {column}" in message
    if row is not None:
        assert f"row {row}," in message
    assert not out.exists() and not (tmp_path / "out.tmp").exists()
    assert list(tmp_path.iterdir()) == [tmp_path / "raw"]


@pytest.mark.parametrize(
    "case, row, column",
    [
        ("text", 2, "cpu"),
        ("unknown attempt", 1, "attempt"),
        ("end before start", 2, "window_end"),
        ("reserved name", None, "evictions_so_far"),
    ],
)
def test_bad_usage_named(tmp_path, case, row, column):
    usage = pd.DataFrame(
        {
            "job_id": ["A", "A"],
            "task_id": [0, 1],
            "attempt": [0, 1],
            "window_start": [10.0, 30.0],
            "window_end": [20.0, 40.0],
            "cpu": ["0.5", "0.7"],
        }
    )
    if case == "text":
        usage.loc[1, "cpu"] = "n/a"
    elif case == "unknown attempt":
        usage.loc[0, "attempt"] = 5
    elif case == "end before start":
        usage.loc[1, "window_end"] = 29.0
    else:
        usage = usage.rename(columns={"cpu": "evictions_so_far"})
    write(attempts_frame(), tmp_path / "raw")
    path = write(usage, tmp_path / "raw", "usage")
    with pytest.raises(TaskTableError) as error:
        convert(tmp_path / "raw", tmp_path / "out")
    message = str(error.value)
    assert str(path) in message and f"column {column}" in message
    if row is not None:
        assert f"row {row}," in message
    assert not (tmp_path / "out").exists()


def test_layout_finds_the_table_when_the_dag_is_built(tmp_path):
    write(attempts_frame(), tmp_path / "raw", suffix=".csv.gz")
    layout = raw_layout("tasks-table", {"source": "local"}, str(tmp_path / "raw"))
    assert layout.groups == [["tasks.csv.gz"]] and layout.group_inputs(0) == ["tasks.csv.gz"]
    write(attempts_frame(), tmp_path / "raw", suffix=".parquet")
    with pytest.raises(TaskTableError, match="more than one tasks table"):
        raw_layout("tasks-table", {"source": "local"}, str(tmp_path / "raw"))
    with pytest.raises(TaskTableError, match="no tasks table"):
        raw_layout("tasks-table", {"source": "local"}, str(tmp_path))
    with pytest.raises(ValueError, match="source: local"):
        raw_layout("tasks-table", {"source": "generate"}, None)


def generated_task_table(folder: Path, seed: int, n_jobs: int = 3, n_tasks: int = 60) -> Path:
    """A small task table without usage: per job, tasks start over a minute on 8 machines;
    a task's length grows with its CPU request and its machine (two machines are slow), and a
    few tasks are evicted once before their finishing attempt."""
    rng = np.random.default_rng(seed)
    rows = []
    for job in range(n_jobs):
        origin = 1000.0 * job
        for task in range(n_tasks):
            start = origin + rng.uniform(0, 60)
            request = rng.choice([0.25, 0.5, 1.0])
            attempt = 0
            if rng.random() < 0.1:
                end = start + rng.uniform(5, 30)
                rows.append((f"j{job}", task, 0, start, end, "evicted", "m0", request))
                start, attempt = end + 1.0, 1
            machine = int(rng.integers(0, 8))
            slow = 3.0 if machine >= 6 else 1.0
            length = 60.0 * request * slow * rng.lognormal(0, 0.2)
            rows.append(
                (
                    f"j{job}",
                    task,
                    attempt,
                    start,
                    start + length,
                    "finished",
                    f"m{machine}",
                    request,
                )
            )
    columns = [*COLUMNS[:7], "request_cpu"]
    folder.mkdir(parents=True)
    pd.DataFrame(rows, columns=columns).to_csv(folder / "tasks.csv", index=False)
    return folder


@pytest.mark.e2e
def test_snakemake_on_a_task_table(tmp_path):
    """config/google-2011-shared.yaml with its dataset replaced by a task table without usage,
    no launch or audit section, methods NURD, Elapsed, LATE and Oracle at their defaults."""
    raw = generated_task_table(tmp_path / "my-trace", seed=3)
    config = yaml.safe_load((ROOT / "config" / "google-2011-shared.yaml").read_text())
    del config["launch"], config["audit"]
    config["datasets"] = {
        "my-cluster": {
            "kind": "tasks-table",
            "source": "local",
            "raw_dir": str(raw),
            "n_shards": 2,
            "min_tasks": 50,
            "replay": {"grid_origin": 0, "checkpoint_interval": 10},
        }
    }
    config["methods"] = {name: {} for name in ("NURD", "Elapsed", "LATE", "Oracle")}
    config["simulation"] = {**config["simulation"], "repeats": 2}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile")]
    command += ["--directory", str(tmp_path), "--configfile", str(path)]
    command += ["--replace-workflow-config", "--cores", "1"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-4000:]
    converted = tmp_path / "resources" / "converted" / "my-cluster"
    assert len(read_manifest(converted)) == 3
    report = json.loads((converted / "report.json").read_text())
    assert report["features"] == [
        "request_cpu",
        "machine_load",
        "evictions_so_far",
        "failures_so_far",
    ]
    table = pd.read_csv(tmp_path / "results" / "tables" / "table3.csv")
    rows = table[table["dataset"] == "my-cluster"].set_index("method")
    assert set(rows.index) >= {"NURD", "Elapsed", "LATE", "Oracle"}
    assert rows["F1"].notna().all()
    assert rows.loc["Oracle", "F1"] == 1.0


def test_docs_spark_recipe_writes_a_valid_table(tmp_path, monkeypatch):
    """The by-hand Spark recipe of docs/your-own-trace.md, run on a small event log: a stage
    whose task 1 got a speculative copy (the copy won, the original was killed)."""
    page = (ROOT / "docs" / "your-own-trace.md").read_text()
    blocks = page.split("```python\n")[1:]
    recipe = next(block.split("```")[0] for block in blocks if "SparkListenerTaskEnd" in block)

    def task_end(index, attempt, launch, finish, reason, speculative=False, host="h1"):
        info = {"Index": index, "Attempt": attempt, "Launch Time": launch}
        info |= {"Finish Time": finish, "Host": host, "Speculative": speculative}
        return {
            "Event": "SparkListenerTaskEnd",
            "Stage ID": 3,
            "Stage Attempt ID": 0,
            "Task End Reason": {"Reason": reason},
            "Task Info": info,
        }

    events = [
        {"Event": "SparkListenerApplicationStart", "App Name": "test"},
        task_end(0, 0, 1_000, 2_500, "Success"),
        task_end(1, 1, 4_000, 5_000, "Success", speculative=True, host="h2"),
        task_end(1, 0, 1_000, 5_001, "TaskKilled"),
        task_end(2, 0, 1_200, 1_900, "ExceptionFailure"),
        task_end(2, 1, 2_000, 3_000, "Success"),
    ]
    (tmp_path / "eventlogs").mkdir()
    log = tmp_path / "eventlogs" / "app-20240101000000-0001"
    log.write_text("".join(json.dumps(event) + "\n" for event in events))
    (tmp_path / "my-trace").mkdir()
    monkeypatch.chdir(tmp_path)
    exec(compile(recipe, "docs/your-own-trace.md", "exec"), {})
    summary = convert(tmp_path / "my-trace", tmp_path / "out", min_tasks=3, window_seconds=0.5)
    assert summary["counts"]["tasks_kept"] == 3
    job = only_job(tmp_path / "out")
    assert job.job_id == "3.0"
    assert job.latency.tolist() == [1.5, 4.0, 1.8]  # task 1: from the original's launch
    assert job.machine_id.tolist() == ["h1", "h2", "h1"] and job.failures.tolist() == [0, 0, 1]


def test_docs_page_shows_every_column_of_the_schema():
    from stragglers.formats.tasks_table import schema

    page = (ROOT / "docs" / "your-own-trace.md").read_text()
    for definition in ("task_attempt", "usage_window"):
        row = schema()["$defs"][definition]
        assert f"`{definition}`" in page
        for column in [*row["properties"], *row.get("patternProperties", {})]:
            shown = column.removeprefix("^") + ("<name>" if column.startswith("^") else "")
            assert f"`{shown}`" in page, (definition, column)


def test_a_date_column_is_not_seconds(tmp_path):
    frame = attempts_frame()
    frame["start_time"] = pd.to_datetime(frame["start_time"], unit="s")
    path = write(frame, tmp_path / "raw", suffix=".parquet")
    with pytest.raises(TaskTableError, match="row 1, column start_time: Timestamp") as error:
        convert(tmp_path / "raw", tmp_path / "out")
    assert str(path) in str(error.value) and not (tmp_path / "out").exists()
