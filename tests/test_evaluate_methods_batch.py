"""`dataset_scores` checking and scoring several methods' prediction tables in one batch
against the one-method-at-a-time code it replaces, kept here as the reference: equal frames
and equal CSV bytes on varied methods (failed, unscorable and flag-less jobs, a method whose
jobs all failed, a chosen resume_attempts column, nullable booleans, a folder holding two
methods, a method in two folders, two datasets, batches split by the row budget), and the
same error first when the tables are broken."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from prediction_rows import job_record, task_frame

from stragglers.evaluate import timing
from stragglers.evaluate.metrics import f1_over_time, load_predictions
from stragglers.evaluate.metrics import job_metrics as score_jobs
from stragglers.formats.predictions import KEYS, empty_tasks_frame
from stragglers.io import write_csv_atomic

# ----------------------------------------------------------------------------- the old code


def old_dataset_scores(task_files, job_files, n_points):
    by_method = {}
    for path in task_files:
        by_method.setdefault(Path(path).parent.name, ([], []))[0].append(path)
    for path in job_files:
        by_method.setdefault(Path(path).parent.name, ([], []))[1].append(path)
    metric_frames, per_job_frames, mean_frames, lead_frames = [], [], [], []
    for method_tasks, method_jobs in by_method.values():
        tasks, jobs = load_predictions(method_tasks, method_jobs)
        scored = timing._scored_rows(tasks, jobs)
        metric_frames.append(
            score_jobs(tasks, jobs, validated=True).merge(
                timing.timing_job_metrics(tasks, jobs, validated=True, scored=scored),
                on=KEYS,
                how="left",
            )
        )
        per_job, mean = f1_over_time(tasks, jobs, n_points=n_points, validated=True)
        lead_per_job, lead_mean = timing.lead_over_time(
            tasks, jobs, n_points=n_points, validated=True, scored=scored
        )
        per_job_frames.append(per_job.merge(lead_per_job, on=[*KEYS, "k"], how="left"))
        mean_frames.append(mean.merge(lead_mean, on=["dataset", "method", "k"], how="left"))
        lead_frames.append(timing.flag_leads(tasks, jobs, validated=True, scored=scored))
    return tuple(
        pd.concat(frames, ignore_index=True)
        for frames in (metric_frames, per_job_frames, mean_frames, lead_frames)
    )


# ----------------------------------------------------------------------------- inputs

FAMILIES = ["Supervised", "Ours", "Reference", "Outlier detection", "Schedulers"]


def method_tables(rng, dataset, method, family, kind):
    """One method's tables: jobs ok, failed, unscorable (no straggler), flag-less; `kind`
    all_failed (no task row), attempts (a resume_attempts column), nullable (BooleanDtype
    columns), or plain."""
    tasks, jobs = [], []
    statuses = ["ok", "ok", "failed", "ok", "ok", "ok"]
    if kind == "all_failed":
        statuses = ["failed", "failed"]
    for n, status in enumerate(statuses):
        job_id = str(int(rng.integers(1, 60)) * 10 + n)  # strings that sort apart from numbers
        n_tasks = int(rng.integers(1, 25))
        start = rng.uniform(0, 100, n_tasks)
        end = start + rng.lognormal(4, 1, n_tasks)
        latency = end - start
        threshold = float(np.quantile(latency, 0.9)) if n != 3 else latency.max() + 1
        flag = np.round(start + rng.uniform(0, 1, n_tasks) * latency, -1)
        flag = np.clip(flag, start, np.nextafter(end, start))
        flagged = rng.random(n_tasks) < (0.0 if n == 4 else 0.5)
        if status == "ok":
            evaluated = rng.random(n_tasks) < 0.85 if n else True
            frame = task_frame(
                dataset, method, job_id, rng.permutation(n_tasks), start, latency, threshold,
                evaluated, flagged, flag,
            )  # fmt: skip
            if kind == "attempts":
                chosen = flagged & (rng.random(n_tasks) < 0.5)
                frame["resume_attempts"] = np.where(chosen, rng.integers(1, 4, n_tasks), np.nan)
            if kind == "nullable":
                for column in ("is_straggler", "evaluated", "flagged"):
                    frame[column] = frame[column].astype("boolean")
            tasks.append(frame)
        jobs.append(
            job_record(
                dataset,
                method,
                family,
                job_id,
                status,
                threshold,
                start,
                end,
                privileged=method == "Oracle",
                reason="" if status == "ok" else "it broke",
                seconds=float(rng.uniform(0, 2)),
            )  # fmt: skip
        )
    if not tasks:  # the replay writes an empty table with the task columns
        tasks = [empty_tasks_frame()]
    return pd.concat(tasks, ignore_index=True), pd.DataFrame(jobs)


def write_methods(root: Path, seed: int, layout: str):
    """Prediction files of several methods under root/<folder>/, two shards each; `layout`:
    plain, two_in_one (a folder holding two methods), one_in_two (a method in two folders),
    two_datasets."""
    rng = np.random.default_rng(seed)
    names = ["NURD", "Oracle", "GBTR", "zeta", "LATE", "Alpha"]
    kinds = ["plain", "all_failed", "attempts", "nullable", "plain", "plain"]
    task_files, job_files = [], []
    for n, (name, kind) in enumerate(zip(names, kinds, strict=True)):
        folder = name
        method, dataset = name, "ds"
        if layout == "two_in_one" and n == 4:
            folder = names[3]
        if layout == "one_in_two" and n == 5:
            method = names[0]
        if layout == "two_datasets" and n % 2:
            dataset = "other"
        tasks, jobs = method_tables(rng, dataset, method, FAMILIES[n % len(FAMILIES)], kind)
        (root / folder).mkdir(exist_ok=True)
        for shard in range(2):
            suffix = f"{n}-{shard}"
            task_part = tasks[tasks["job_id"].map(hash) % 2 == shard] if shard else tasks
            job_part = jobs[jobs["job_id"].isin(task_part["job_id"]) | (shard == 0)]
            if shard:
                task_part = task_part.iloc[:0]
                job_part = job_part.iloc[:0]
            task_path = root / folder / f"shard-{suffix}.tasks.parquet"
            job_path = root / folder / f"shard-{suffix}.jobs.parquet"
            task_part.to_parquet(task_path, index=False)
            job_part.to_parquet(job_path, index=False)
            task_files.append(str(task_path))
            job_files.append(str(job_path))
    return task_files, job_files


def csv_bytes(frame, path):
    write_csv_atomic(frame, str(path))
    return path.read_bytes()


# ----------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("budget", [250_000, 40])
@pytest.mark.parametrize("layout", ["plain", "two_in_one", "one_in_two", "two_datasets"])
@pytest.mark.parametrize("seed", range(2))
def test_batches_equal_one_method_at_a_time(tmp_path, monkeypatch, seed, layout, budget):
    task_files, job_files = write_methods(tmp_path, seed, layout)
    monkeypatch.setattr(timing, "BATCH_TASK_ROWS", budget)
    new = timing.dataset_scores(task_files, job_files, 4)
    old = old_dataset_scores(task_files, job_files, 4)
    for n, (new_frame, old_frame) in enumerate(zip(new, old, strict=True)):
        pd.testing.assert_frame_equal(new_frame, old_frame, check_exact=True)
        assert csv_bytes(new_frame, tmp_path / f"new{n}.csv") == csv_bytes(
            old_frame, tmp_path / f"old{n}.csv"
        )


def break_method(root: Path, folder: str, how: str) -> None:
    """Break one method's first shard: `how` duplicate, orphan, span, status, corrupt (its
    tasks file no Parquet)."""
    task_path = sorted((root / folder).glob("*.tasks.parquet"))[0]
    if how == "corrupt":
        task_path.write_bytes(b"not a Parquet file")
        return
    job_path = sorted((root / folder).glob("*.jobs.parquet"))[0]
    tasks, jobs = pd.read_parquet(task_path), pd.read_parquet(job_path)
    if how == "duplicate":
        tasks = pd.concat([tasks, tasks.iloc[:1]], ignore_index=True)
    elif how == "orphan":
        jobs = jobs[jobs["job_id"] != tasks["job_id"].iloc[0]]
    elif how == "span":
        jobs = jobs.assign(job_end=jobs["job_start"])
    elif how == "status":
        jobs = jobs.assign(status="maybe")
    tasks.to_parquet(task_path, index=False)
    jobs.to_parquet(job_path, index=False)


@pytest.mark.parametrize(
    "breaks, n_points",
    [
        ([("GBTR", "duplicate")], 4),
        ([("LATE", "span")], 4),
        ([("GBTR", "span"), ("LATE", "duplicate")], 4),
        ([("GBTR", "orphan"), ("NURD", "span")], 4),
        ([("zeta", "status")], 0),
        ([("Alpha", "orphan")], 2.5),
        ([], 0),
        ([("NURD", "span"), ("Oracle", "missing")], 4),
        ([("Oracle", "missing"), ("NURD", "status")], 4),
        ([("GBTR", "span"), ("LATE", "corrupt")], 4),
        ([("LATE", "corrupt")], 4),
    ],
)
@pytest.mark.parametrize("budget", [250_000, 1])
def test_the_first_error_is_the_one_method_at_a_time_code_raises(
    tmp_path, monkeypatch, breaks, n_points, budget
):
    task_files, job_files = write_methods(tmp_path, 5, "plain")
    for folder, how in breaks:
        if how == "missing":  # a method whose jobs files are gone: reading it fails
            job_files = [p for p in job_files if Path(p).parent.name != folder]
        else:
            break_method(tmp_path, folder, how)
    monkeypatch.setattr(timing, "BATCH_TASK_ROWS", budget)
    with pytest.raises(ValueError) as old:
        old_dataset_scores(task_files, job_files, n_points)
    with pytest.raises(ValueError) as new:
        timing.dataset_scores(task_files, job_files, n_points)
    assert str(new.value) == str(old.value)
