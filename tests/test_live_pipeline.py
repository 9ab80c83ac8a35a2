"""The recorded Spark application (tests/data/live-spark/, docs/live.md) through `snakemake` as
an ordinary `tasks-table` dataset (tests/configs/live-spark/config.yaml): NURD, Elapsed, LATE,
Spark's speculation rule with and without its efficiency check, and the Oracle, up to Table 3.

The running metrics the recorder wrote (usage.csv: rates over each poll window) reach the job
files as features, add up per task to what Spark's event log reports at the task's end, and
change while a task runs in what a method is shown at each checkpoint.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from workflow_runs import ROOT, load_config, run_snakemake, write_config

from stragglers.convert.spark_eventlog import iter_lines, log_files
from stragglers.formats.datasets import last_columns
from stragglers.formats.jobs import iter_shard_jobs
from stragglers.methods.base import Checkpoint, Method
from stragglers.replay.core import ReplaySettings, dataset_replay
from stragglers.replay.runner import replay_job

RECORDED = ROOT / "tests" / "data" / "live-spark"
DATASET = "live-spark"
KIND = "tasks-table"
RATES = [
    "cpu_rate",
    "gc_rate",
    "records_read_rate",
    "bytes_read_rate",
    "records_written_rate",
    "bytes_written_rate",
    "spill_bytes_rate",
]
# the event log's end-of-task totals the read rates are rates of (stragglers/live/spark.py)
READ_TOTALS = {
    "records_read_rate": (
        ("Input Metrics", "Records Read"),
        ("Shuffle Read Metrics", "Total Records Read"),
    ),
    "bytes_read_rate": (
        ("Input Metrics", "Bytes Read"),
        ("Shuffle Read Metrics", "Remote Bytes Read"),
        ("Shuffle Read Metrics", "Local Bytes Read"),
    ),
}


def job_file_tasks() -> dict[tuple[int, int], int]:
    """(stage, Spark's task index) -> the task's number in its job file: a job file numbers
    its tasks by start (their first attempt's launch; the table's order breaks ties)."""
    table = pd.read_csv(RECORDED / "tasks.csv").reset_index()
    first = (
        table.groupby(["job_id", "task_id"], sort=False)
        .agg(start=("start_time", "min"), row=("index", "min"))
        .reset_index()
        .sort_values(["job_id", "start", "row"], kind="stable")
    )
    first["number"] = first.groupby("job_id").cumcount()
    stage = first["job_id"].str.extract(r"_stage(\d+)\.")[0].astype(int)
    return dict(zip(zip(stage, first["task_id"]), first["number"], strict=True))


def logged_read_totals() -> pd.DataFrame:
    """Each task attempt's records and bytes read (input + shuffle) as its end event reports;
    `task` is its number in the job file."""
    numbers = job_file_tasks()
    rows = []
    for files in log_files([RECORDED / "eventlog"]):
        for path in files:
            for line in iter_lines(path):
                event = json.loads(line)
                if event["Event"] != "SparkListenerTaskEnd":
                    continue
                info, metrics = event["Task Info"], event.get("Task Metrics") or {}
                row = {
                    "stage": event["Stage ID"],
                    "task": numbers[(event["Stage ID"], info["Index"])],
                    "attempt": info["Attempt"],
                }
                for rate, parts in READ_TOTALS.items():
                    row[rate] = sum(
                        (metrics.get(group) or {}).get(name, 0) for group, name in parts
                    )
                rows.append(row)
    return pd.DataFrame(rows)


def long_task_growth(windows: pd.DataFrame, single: pd.Index) -> pd.DataFrame:
    """Per task of one attempt (`single`, (stage, task)) with 3 windows or more: its windows,
    and per read rate the windows in which the amount read grew and the amount read by the
    end of its last window but one (rate x length summed, in window order)."""
    rows = {}
    for key, task in windows.sort_values("window_end").groupby(["stage", "task"]):
        if key not in single or len(task) < 3:
            continue
        length = task["window_end"] - task["window_start"]
        row = {"windows": len(task)}
        for rate in READ_TOTALS:
            read = task[rate] * length
            row[f"{rate}_growing"] = int((read > 0).sum())
            row[f"{rate}_before_last"] = float(read.iloc[:-1].sum())
        rows[key] = row
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["stage", "task"])


class Spy(Method):
    """Flags nothing; keeps what each checkpoint shows it of every running task."""

    name = "Spy"
    family = "test"

    def __init__(self, params=None, seed=0):
        super().__init__(params, seed)
        self.seen: list[tuple[float, int, np.ndarray]] = []

    def predict(self, checkpoint: Checkpoint) -> np.ndarray:
        for task, features in zip(
            checkpoint.running_tasks, checkpoint.running_features, strict=True
        ):
            self.seen.append((checkpoint.time, int(task), features.copy()))
        return np.zeros(len(checkpoint.running_tasks), dtype=bool)


@pytest.mark.e2e  # ~20 s on 2 cores: a 24-task dataset
def test_the_recorded_spark_application_runs_through_snakemake(tmp_path):
    config = load_config("live-spark")
    path = write_config(config, tmp_path / "config.yaml")
    run = run_snakemake(tmp_path, path, "--cores", "2", "results/tables/table3.csv", timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    converted = tmp_path / "resources" / "converted" / DATASET
    report = json.loads((converted / "report.json").read_text())
    # the warm-up stage (4 tasks) is dropped; the map and the reduce stage (12 tasks each) kept
    assert report["counts"]["jobs_seen"] == 3 and report["counts"]["jobs_kept"] == 2
    assert [f for f in report["features"] if f in RATES] == RATES

    # every method (each config entry is its own label) on every kept stage, every task scored
    stages = {
        p.stem: len(pd.read_parquet(p)["task"].unique())
        for p in converted.rglob("*.parquet")
        if p.parent.name.startswith("shard-")
    }
    for label in config["methods"]:
        folder = tmp_path / "results" / DATASET / "predictions" / label
        jobs = pd.read_parquet(folder / "shard-0.jobs.parquet")
        assert dict(zip(jobs["job_id"], jobs["n_tasks"], strict=True)) == stages, label
        assert (jobs["status"] == "ok").all(), (label, jobs["reason"].tolist())
        tasks = pd.read_parquet(folder / "shard-0.tasks.parquet")
        assert tasks.groupby("job_id")["task"].nunique().to_dict() == stages, label
    table = pd.read_csv(tmp_path / "results" / "tables" / "table3.csv")
    rows = table[table["dataset"] == DATASET].set_index("method")
    assert set(rows.index) == set(config["methods"])
    assert rows.loc[["Spark-speculation", "Spark-speculation efficiency"], "F1"].notna().all()
    assert rows.loc["Oracle", "TPR"] > 0

    # the rates are in the job files, non-negative on windows of positive length (so a task's
    # cumulative metric, rate x length summed over its windows, only grows), and add up to
    # the event log's end-of-task totals for every task that ran one attempt
    windows = pd.concat(
        pd.read_parquet(p).assign(stage=int(p.stem.split("stage")[1].split(".")[0]))
        for p in sorted((converted / "jobs").rglob("*.parquet"))
    )
    assert (windows["window_end"] > windows["window_start"]).all()
    assert (windows[RATES] >= 0).all().all()
    length = windows["window_end"] - windows["window_start"]
    totals = (
        windows[["stage", "task"]]
        .assign(**{rate: windows[rate] * length for rate in READ_TOTALS})
        .groupby(["stage", "task"])
        .sum()
    )
    logged = logged_read_totals()
    logged = logged[logged["stage"].isin(windows["stage"])]  # the kept stages
    single = logged.groupby(["stage", "task"]).filter(lambda attempts: len(attempts) == 1)
    single = single.set_index(["stage", "task"])
    assert len(single) == 23  # 24 tasks, one of them copied by Spark
    for rate in READ_TOTALS:
        np.testing.assert_allclose(totals.loc[single.index, rate], single[rate], rtol=1e-6)
    assert single["records_read_rate"].sum() > 0  # the reduce stage's shuffle read

    # the running metrics grow within each long task: a task of one attempt with 3 windows or
    # more reads (records and bytes: input in the map stage, shuffle in the reduce stage) in
    # at least two of its windows, one of them before its last, so that a method sees the
    # amount read grow while the task runs (a PySpark task over parallelized data reads in
    # one window, or in none)
    growth = long_task_growth(windows, single.index)
    assert set(growth.index.get_level_values("stage")) == {1, 2}, growth  # map, reduce
    assert (growth["windows"] >= 3).all()
    for rate in READ_TOTALS:
        assert (growth[f"{rate}_growing"] >= 2).all(), growth
        assert (growth[f"{rate}_before_last"] > 0).all(), growth

    # and what a method is shown of a running task changes from checkpoint to checkpoint
    replay = ReplaySettings(**dataset_replay(config["replay"], config["datasets"][DATASET]))
    last = last_columns(KIND, converted)
    seen_changing = []
    for job in iter_shard_jobs(converted, KIND, None):
        spy = Spy()
        replay_job(job, spy, replay, last, seed=0)
        k = job.feature_names.index("records_read_rate")
        shown: dict[int, list[float]] = {}
        for _, task, features in spy.seen:
            shown.setdefault(task, []).append(features[k])
        seen_changing += [
            (job.job_id, task) for task, values in shown.items() if len(set(values)) > 1
        ]
    assert seen_changing, "no running task's records read rate changed between checkpoints"
