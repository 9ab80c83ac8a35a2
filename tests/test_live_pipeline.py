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


def logged_read_totals() -> pd.DataFrame:
    """Each task attempt's records and bytes read (input + shuffle) as its end event reports."""
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
                    "task": info["Index"],
                    "attempt": info["Attempt"],
                }
                for rate, parts in READ_TOTALS.items():
                    row[rate] = sum(
                        (metrics.get(group) or {}).get(name, 0) for group, name in parts
                    )
                rows.append(row)
    return pd.DataFrame(rows)


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


@pytest.mark.e2e  # ~20 s on 2 cores: 13 jobs of a 48-task dataset
def test_the_recorded_spark_application_runs_through_snakemake(tmp_path):
    config = load_config("live-spark")
    path = write_config(config, tmp_path / "config.yaml")
    run = run_snakemake(tmp_path, path, "--cores", "2", "results/tables/table3.csv", timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    converted = tmp_path / "resources" / "converted" / DATASET
    report = json.loads((converted / "report.json").read_text())
    assert report["counts"]["jobs_kept"] == report["counts"]["jobs_seen"] == 3  # every stage
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
    single = logged.groupby(["stage", "task"]).filter(lambda attempts: len(attempts) == 1)
    single = single.set_index(["stage", "task"])
    assert len(single) == 46  # 48 tasks, two of them copied by Spark
    for rate in READ_TOTALS:
        np.testing.assert_allclose(totals.loc[single.index, rate], single[rate], rtol=1e-6)
    assert single["records_read_rate"].sum() > 0  # the reduce stage's shuffle read

    # a long task's windows carry different read rates
    per_task = windows.groupby(["stage", "task"])
    long_tasks = per_task.size()[per_task.size() >= 3].index
    varying = {
        rate: [key for key in long_tasks if per_task.get_group(key)[rate].nunique() > 1]
        for rate in RATES
    }
    assert varying["records_read_rate"] and varying["bytes_read_rate"], varying

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
