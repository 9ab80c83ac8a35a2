"""`validate_predictions`'s check on arrays (`_predictions_pass`: the keys numbered once, each
task row's job found by a binary search) against the pandas checks it stands in front of
(`_check_prediction_rows`, which name the offending rows): on valid tables it passes (and so
skips them), and on tables broken in every way those checks know, and a few they do not
(missing or mixed-type keys), validate_predictions raises what they raise."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from prediction_rows import job_record, task_frame

from stragglers.evaluate import metrics


def tables(rng, n_methods=2, n_jobs=4):
    """Valid tasks and jobs of several methods and datasets: ok and failed jobs, flags,
    chosen resume attempts, a NaN family beside a named one."""
    tasks, jobs = [], []
    for m in range(n_methods):
        dataset, method = f"d{m % 2}", f"M{m}"
        for n in range(n_jobs):
            job_id = str(10 * n + m % 2)  # the same ids in every method
            status = "failed" if n == n_jobs - 1 else "ok"
            n_tasks = int(rng.integers(1, 12))
            start = rng.uniform(0, 50, n_tasks)
            latency = rng.lognormal(3, 1, n_tasks)
            threshold = float(np.quantile(latency, 0.9))
            flagged = rng.random(n_tasks) < 0.5
            if status == "ok":
                frame = task_frame(
                    dataset, method, job_id, rng.permutation(n_tasks), start, latency,
                    threshold, rng.random(n_tasks) < 0.9, flagged, start + 0.5 * latency,
                )  # fmt: skip
                chosen = flagged & (rng.random(n_tasks) < 0.5)
                frame["resume_attempts"] = np.where(chosen, 2.0, np.nan)
                tasks.append(frame)
            names = (dataset, method, np.nan if n == 1 else f"F{m}")
            extra = dict(privileged=m == 1)
            jobs.append(
                job_record(*names, job_id, status, threshold, start, start + latency, **extra)
            )
    return pd.concat(tasks, ignore_index=True), pd.DataFrame(jobs)


def first_row(frame, column, value):
    return frame.index[frame[column] == value][0]


def broken(rng, how):
    """Valid tables broken one way (`how`), or left valid (`how` "none", or the variants that
    stay valid: nullable booleans without NA, a table without resume_attempts, no tasks)."""
    tasks, jobs = tables(rng)
    ok_job = jobs.index[jobs["status"] == "ok"][0]
    if how == "status":
        jobs.loc[ok_job, "status"] = "maybe"
    elif how == "status_nan":
        jobs.loc[ok_job, "status"] = np.nan
    elif how == "duplicate_job":
        jobs = pd.concat([jobs, jobs.iloc[[ok_job]]], ignore_index=True)
    elif how == "duplicate_task":
        tasks = pd.concat([tasks, tasks.iloc[[len(tasks) - 1]]], ignore_index=True)
    elif how == "int_flags":
        tasks["flagged"] = tasks["flagged"].astype(int)
    elif how == "nullable_with_na":
        tasks["evaluated"] = tasks["evaluated"].astype("boolean")
        tasks.loc[0, "evaluated"] = pd.NA
    elif how == "nullable":
        for column in ("is_straggler", "evaluated", "flagged"):
            tasks[column] = tasks[column].astype("boolean")
    elif how == "flag_time":
        tasks.loc[first_row(tasks, "flagged", True), "flag_time"] = np.nan
    elif how == "attempts_unflagged":
        tasks.loc[first_row(tasks, "flagged", False), "resume_attempts"] = 2.0
    elif how == "attempts_fraction":
        tasks.loc[first_row(tasks, "flagged", True), "resume_attempts"] = 1.5
    elif how == "no_attempts":
        tasks = tasks.drop(columns="resume_attempts")
    elif how == "family":
        jobs.loc[ok_job, "family"] = "Other"
    elif how == "privileged":
        jobs.loc[ok_job, "privileged"] = not jobs.loc[ok_job, "privileged"]
    elif how == "orphan":
        tasks.loc[0, "job_id"] = "999"
    elif how == "of_failed":
        failed = jobs[jobs["status"] == "failed"].iloc[0]
        tasks.loc[0, ["dataset", "method", "job_id"]] = failed[["dataset", "method", "job_id"]]
        tasks.loc[0, "task"] = 10_000
    elif how == "without_tasks":
        tasks = tasks[tasks["job_id"] != jobs.loc[ok_job, "job_id"]].reset_index(drop=True)
    elif how == "straggler":
        tasks.loc[0, "is_straggler"] = not tasks.loc[0, "is_straggler"]
    elif how == "missing_key":
        tasks.loc[0, "job_id"] = None
    elif how == "missing_job_key":
        jobs.loc[jobs.index[-1], "job_id"] = None
    elif how == "int_job_ids":
        tasks["job_id"] = tasks["job_id"].astype(int)
    elif how == "missing_column":
        jobs = jobs.drop(columns="straggler_threshold")
    elif how == "no_tasks":
        tasks = tasks.iloc[:0]
        jobs = jobs.assign(status="failed")
    elif how == "task_float":
        tasks["task"] = tasks["task"].astype(float)
        tasks.loc[len(tasks) - 1, "task"] = np.nan
    return tasks, jobs


VALID = ["none", "nullable", "no_attempts", "no_tasks"]
BROKEN = [
    "status", "status_nan", "duplicate_job", "duplicate_task", "int_flags", "nullable_with_na",
    "flag_time", "attempts_unflagged", "attempts_fraction", "family", "privileged", "orphan",
    "of_failed", "without_tasks", "straggler", "missing_key", "missing_job_key", "int_job_ids",
    "missing_column", "task_float",
]  # fmt: skip


def outcome(check, tasks, jobs):
    try:
        check(tasks, jobs)
    except Exception as error:  # pandas' own errors too: the same type and message
        return type(error), str(error)
    return None


@pytest.mark.parametrize("how", VALID + BROKEN)
@pytest.mark.parametrize("seed", range(4))
def test_validate_raises_what_the_row_checks_raise(seed, how):
    tasks, jobs = broken(np.random.default_rng(seed), how)
    expected = outcome(metrics._check_prediction_rows, tasks, jobs)
    assert outcome(metrics.validate_predictions, tasks, jobs) == expected
    if how in VALID:
        assert expected is None
        assert metrics._predictions_pass(tasks, jobs)  # the row checks were skipped
    elif expected is not None:
        assert not metrics._predictions_pass(tasks, jobs)
