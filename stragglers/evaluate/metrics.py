"""Scoring of straggler predictions: per-job confusion matrices, Table 3, F1 over time, cost.

Works only on the prediction files (`stragglers.formats.predictions`), never on method code,
so every number here can be recomputed from the prediction files alone. The conventions and
every edge case (unscored tasks, unscorable and failed jobs, undefined FPR, F1 with nothing
flagged) are in docs/definitions.md ("Evaluation").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from stragglers.formats.predictions import (
    KEYS,
    REQUIRED_JOB_COLUMNS,
    REQUIRED_TASK_COLUMNS,
)

JOB_STATUSES = ("ok", "failed")

# Row order of the paper's Table 3; families not listed go after "Ours", before "Reference".
FAMILY_ORDER = (
    "Supervised",
    "Outlier detection",
    "Positive-unlabeled",
    "Censored and survival regression",
    "Systems",
    "Schedulers",  # rules clusters run today (Elapsed, LATE): no model
    "Ours",
)
REFERENCE_FAMILY = "Reference"
# Method order inside the paper's Table 3 (then Oracle); unknown methods sort after these.
PAPER_METHOD_ORDER = (
    "GBTR",
    "ABOD",
    "CBLOF",
    "HBOS",
    "IFOREST",
    "KNN",
    "LOF",
    "MCD",
    "OCSVM",
    "PCA",
    "SOS",
    "LSCP",
    "COF",
    "SOD",
    "XGBOD",
    "PU-EN",
    "PU-BG",
    "Tobit",
    "Grabit",
    "CoxPH",
    "Wrangler",
    "NURD-NC",
    "NURD",
    "Oracle",
)


def normalise_method_name(name: str) -> str:
    """Case- and punctuation-free form, so "NURD-NC", "nurd_nc" and "NurdNC" compare equal."""
    return re.sub(r"[^0-9a-z]", "", str(name).lower())


_PAPER_METHOD_RANK = {normalise_method_name(m): i for i, m in enumerate(PAPER_METHOD_ORDER)}


def family_rank(family: str | None) -> int:
    if family is None:
        return 0
    if family in FAMILY_ORDER:
        return FAMILY_ORDER.index(family)
    if family == REFERENCE_FAMILY:
        return len(FAMILY_ORDER) + 1
    return len(FAMILY_ORDER)  # unknown families: after "Ours", before "Reference"


def method_sort_key(method: str, family: str | None = None) -> tuple[int, int, str]:
    """Sort key: family (paper order), then the paper's method order, then the name."""
    rank = _PAPER_METHOD_RANK.get(normalise_method_name(method), len(PAPER_METHOD_ORDER))
    return (family_rank(family), rank, str(method).lower())


def sort_rows(
    frame: pd.DataFrame, dataset_order: Sequence[str] | None = None, extra: Sequence[str] = ()
) -> pd.DataFrame:
    """Order rows by family and method as in Table 3, then dataset, then `extra` columns.

    Datasets follow `dataset_order` if given (datasets not in it go last), otherwise their
    order of first appearance.
    """
    # positional from here on: labels repeated in the caller's index would multiply rows
    frame = frame.reset_index(drop=True)
    if frame.empty:
        return frame
    has_family = "family" in frame
    # a row's keys follow from its (method, family): computed once per distinct pair and
    # spread to the rows by the pair's number (method names are strings)
    pair = np.zeros(len(frame), dtype=np.int64)
    for column in ["method", "family"] if has_family else ["method"]:
        # factorize takes None and NaN for one value; the keys tell them apart
        code, _ = pd.factorize(frame[column], use_na_sentinel=False)
        code = 2 * code.astype(np.int64) + np.equal(frame[column].to_numpy(), None)
        pair = pair * (int(code.max()) + 1) + code
    _, first_rows, pair = np.unique(pair, return_index=True, return_inverse=True)
    pair_keys = [
        method_sort_key(frame["method"].iat[i], frame["family"].iat[i] if has_family else None)
        for i in first_rows
    ]
    sort_frame = pd.DataFrame(
        {
            "_family": np.array([k[0] for k in pair_keys], dtype=np.int64)[pair],
            "_method_rank": np.array([k[1] for k in pair_keys], dtype=np.int64)[pair],
            "_method": np.array([k[2] for k in pair_keys], dtype=object)[pair],
        },
        index=frame.index,
    )
    by = ["_family", "_method_rank", "_method"]
    if "dataset" in frame:
        seen = list(dict.fromkeys(frame["dataset"]))
        order = list(dataset_order) if dataset_order is not None else seen
        rank = {d: i for i, d in enumerate(order)}
        dataset_code, _ = pd.factorize(frame["dataset"], use_na_sentinel=False)
        dataset_code = 2 * dataset_code + np.equal(frame["dataset"].to_numpy(), None)
        _, first_rows, dataset_code = np.unique(
            dataset_code, return_index=True, return_inverse=True
        )
        dataset_rank = [rank.get(frame["dataset"].iat[i], len(order)) for i in first_rows]
        sort_frame["_dataset"] = np.array(dataset_rank, dtype=np.int64)[dataset_code]
        sort_frame["_dataset_name"] = frame["dataset"].astype(str)
        by += ["_dataset", "_dataset_name"]
    for column in extra:
        sort_frame[f"_x_{column}"] = frame[column]
        by.append(f"_x_{column}")
    order_index = sort_frame.sort_values(by, kind="stable").index
    return frame.loc[order_index].reset_index(drop=True)


# ---------------------------------------------------------------------------------------
# confusion matrix and rates


def _as_bool(values, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype == bool:
        return array
    if array.dtype.kind in "iu" and np.isin(array, (0, 1)).all():
        return array.astype(bool)
    raise ValueError(f"{name} must be boolean (or 0/1 integers), got dtype {array.dtype}")


def confusion(is_straggler, flagged) -> tuple[int, int, int, int]:
    """(tp, fp, fn, tn) with stragglers as positives and flagged tasks as predicted positives."""
    truth = _as_bool(is_straggler, "is_straggler")
    predicted = _as_bool(flagged, "flagged")
    if truth.shape != predicted.shape:
        raise ValueError(
            f"is_straggler and flagged differ in shape: {truth.shape} vs {predicted.shape}"
        )
    tp = int(np.count_nonzero(truth & predicted))
    fp = int(np.count_nonzero(~truth & predicted))
    fn = int(np.count_nonzero(truth & ~predicted))
    tn = int(np.count_nonzero(~truth & ~predicted))
    return tp, fp, fn, tn


def rates(tp, fp, fn, tn) -> dict:
    """TPR, FPR, FNR, precision and F1 from counts (scalars or equal-shape arrays).

    Undefined rates are NaN: TPR, FNR, precision and F1 when there is no straggler, FPR when
    there is no non-straggler. With stragglers but no predicted positive, precision and F1 are 0.
    """
    counts = [np.asarray(x, dtype=float) for x in (tp, fp, fn, tn)]
    for name, values in zip(("tp", "fp", "fn", "tn"), counts, strict=True):
        if np.any(values < 0) or np.any(np.isnan(values)):
            raise ValueError(f"{name} must be non-negative counts, got {values}")
    tp, fp, fn, tn = np.broadcast_arrays(*counts)
    positives = tp + fn
    negatives = fp + tn
    has_positives = positives > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr = np.where(has_positives, tp / positives, np.nan)
        fpr = np.where(negatives > 0, fp / negatives, np.nan)
        precision = np.where(tp + fp > 0, tp / (tp + fp), 0.0)
        precision = np.where(has_positives, precision, np.nan)
        f1 = np.where(has_positives, 2 * tp / (2 * tp + fp + fn), np.nan)
    result = {"TPR": tpr, "FPR": fpr, "FNR": 1.0 - tpr, "precision": precision, "F1": f1}
    if tpr.ndim == 0:
        return {k: float(v) for k, v in result.items()}
    return result


# ---------------------------------------------------------------------------------------
# input checks


def _require_columns(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} table lacks columns {missing}; has {list(frame.columns)}")


def _describe_rows(frame: pd.DataFrame, mask, columns: Sequence[str], limit: int = 3) -> str:
    rows = frame.loc[np.asarray(mask), list(columns)].head(limit)
    return "; ".join(", ".join(f"{c}={row[c]!r}" for c in columns) for _, row in rows.iterrows())


def validate_predictions(tasks: pd.DataFrame, jobs: pd.DataFrame) -> None:
    """Raise ValueError naming the offending rows if the two tables disagree or break rules."""
    if _predictions_pass(tasks, jobs):
        return
    _check_prediction_rows(tasks, jobs)


def _key_codes(
    tasks: pd.DataFrame, jobs: pd.DataFrame, columns: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, int] | None:
    """One int64 per row of each table numbering its values of `columns` (equal values,
    equal numbers, in both tables) and how many numbers there can be; None when a value is
    missing or a column's dtypes differ (pandas matches those its own ways, or refuses to)
    or the numbers would not fit."""
    task_key = np.zeros(len(tasks), dtype=np.int64)
    job_key = np.zeros(len(jobs), dtype=np.int64)
    size = 1
    for column in columns:
        if tasks[column].dtype != jobs[column].dtype:
            return None
        both = np.concatenate([tasks[column].to_numpy(object), jobs[column].to_numpy(object)])
        if pd.isna(both).any():
            return None
        codes, uniques = pd.factorize(both)
        size *= max(len(uniques), 1)
        if size >= 2**62:
            return None
        task_key = task_key * len(uniques) + codes[: len(tasks)]
        job_key = job_key * len(uniques) + codes[len(tasks) :]
    return task_key, job_key, size


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
    # a sort, not np.unique: numpy's hashing unique of integers is far slower
    keys = np.sort(keys)
    return keys[np.concatenate([keys[:1] == keys[:1], keys[1:] != keys[:-1]])]


def _distinct(keys: np.ndarray) -> bool:
    return _sorted_unique(keys).size == keys.size


def _predictions_pass(tasks: pd.DataFrame, jobs: pd.DataFrame) -> bool:
    """True only when every check of `_check_prediction_rows` passes, computed on arrays (the
    keys numbered once, each task row's job found by a binary search, in place of pandas'
    merges, duplicate searches and groupby); False when one may fail, then that check
    names the rows."""
    if any(c not in tasks for c in REQUIRED_TASK_COLUMNS) or any(
        c not in jobs for c in REQUIRED_JOB_COLUMNS
    ):
        return False
    status = jobs["status"].to_numpy(object)
    ok, failed = status == "ok", status == "failed"
    if not (ok | failed).all():
        return False
    keys = _key_codes(tasks, jobs, KEYS)
    task_numbers = tasks["task"].to_numpy(object)
    if keys is None or pd.isna(task_numbers).any():
        return False
    task_key, job_key, _ = keys
    task_codes, task_uniques = pd.factorize(task_numbers)
    if not _distinct(job_key) or not _distinct(task_key * len(task_uniques) + task_codes):
        return False
    for column in ("is_straggler", "evaluated", "flagged"):
        values = tasks[column]
        nullable_ok = isinstance(values.dtype, pd.BooleanDtype) and not values.isna().any()
        if values.dtype != bool and not nullable_ok:
            return False
    if (tasks["flagged"].to_numpy() == tasks["flag_time"].isna().to_numpy()).any():
        return False
    if "resume_attempts" in tasks:
        attempts = tasks["resume_attempts"].to_numpy(float)
        chosen = ~np.isnan(attempts)
        bad = chosen & (
            ~tasks["flagged"].to_numpy(bool) | (attempts < 1) | (attempts != np.floor(attempts))
        )
        if bad.any():
            return False
    # at most one family and one privileged value (missing ones not counted) per method
    pair = _key_codes(jobs, jobs, ["dataset", "method"])[0]
    for column in ("family", "privileged"):
        codes, uniques = pd.factorize(jobs[column].to_numpy(object))
        counted = _sorted_unique(pair[codes >= 0] * (len(uniques) + 1) + codes[codes >= 0])
        if not _distinct(counted // (len(uniques) + 1)):
            return False
    # every task row's job is in the jobs table and ran ok; every ok job has task rows
    order = np.argsort(job_key, kind="stable")
    position = np.searchsorted(job_key[order], task_key)
    found = position < job_key.size
    found[found] = job_key[order][position[found]] == task_key[found]
    if not found.all():
        return False
    job_of_task = order[position]
    has_tasks = np.zeros(len(jobs), dtype=bool)
    has_tasks[job_of_task] = True
    if failed[job_of_task].any() or (ok & ~has_tasks).any():
        return False
    threshold = jobs["straggler_threshold"].to_numpy(float)[job_of_task]
    expected = tasks["latency"].to_numpy(float) >= threshold
    return not (expected != tasks["is_straggler"].to_numpy()).any()


def _check_prediction_rows(tasks: pd.DataFrame, jobs: pd.DataFrame) -> None:
    """validate_predictions's checks one after the other, each naming the rows it fails on."""
    _require_columns(tasks, REQUIRED_TASK_COLUMNS, "tasks")
    _require_columns(jobs, REQUIRED_JOB_COLUMNS, "jobs")

    bad_status = ~jobs["status"].isin(JOB_STATUSES)
    if bad_status.any():
        raise ValueError(
            f"jobs table: status must be one of {JOB_STATUSES}: "
            + _describe_rows(jobs, bad_status, KEYS + ["status"])
        )
    duplicated = jobs.duplicated(KEYS, keep=False)
    if duplicated.any():
        raise ValueError(
            "jobs table: duplicate (dataset, method, job_id) rows: "
            + _describe_rows(jobs, duplicated, KEYS)
        )
    duplicated = tasks.duplicated(KEYS + ["task"], keep=False)
    if duplicated.any():
        raise ValueError(
            "tasks table: duplicate (dataset, method, job_id, task) rows: "
            + _describe_rows(tasks, duplicated, KEYS + ["task"])
        )
    for column in ("is_straggler", "evaluated", "flagged"):
        values = tasks[column]
        nullable_ok = isinstance(values.dtype, pd.BooleanDtype) and not values.isna().any()
        if values.dtype != bool and not nullable_ok:
            raise ValueError(
                f"tasks table: column {column} must be bool without missing "
                f"values, got {values.dtype}"
            )
    inconsistent = tasks["flagged"].to_numpy() == tasks["flag_time"].isna().to_numpy()
    if inconsistent.any():
        raise ValueError(
            "tasks table: flag_time must be NaN exactly when flagged is False: "
            + _describe_rows(tasks, inconsistent, KEYS + ["task", "flagged", "flag_time"])
        )
    if "resume_attempts" in tasks:  # optional: r + 1 chosen by the method, NaN = default
        attempts = tasks["resume_attempts"].to_numpy(float)
        chosen = ~np.isnan(attempts)
        bad = chosen & (
            ~tasks["flagged"].to_numpy(bool) | (attempts < 1) | (attempts != np.floor(attempts))
        )
        if bad.any():
            raise ValueError(
                "tasks table: resume_attempts must be NaN or an integer >= 1, and "
                "set only on flagged tasks: "
                + _describe_rows(tasks, bad, KEYS + ["task", "flagged", "resume_attempts"])
            )
    families = jobs.groupby(["dataset", "method"], observed=True)[["family", "privileged"]]
    n_variants = families.nunique()
    if (n_variants > 1).any(axis=None):
        bad = n_variants[(n_variants > 1).any(axis=1)].index.tolist()
        raise ValueError(f"jobs table: family/privileged differ between jobs of {bad}")

    # every task row belongs to a job that ran ok; every ok job has task rows
    task_jobs = tasks[KEYS].drop_duplicates()
    joined = task_jobs.merge(jobs[KEYS + ["status"]], on=KEYS, how="left")
    orphan = joined["status"].isna()
    if orphan.any():
        raise ValueError(
            "tasks table has rows for jobs missing from the jobs table: "
            + _describe_rows(joined, orphan, KEYS)
        )
    of_failed = joined["status"] == "failed"
    if of_failed.any():
        raise ValueError(
            "tasks table has rows for jobs whose status is 'failed': "
            + _describe_rows(joined, of_failed, KEYS)
        )
    ok_jobs = jobs.loc[jobs["status"] == "ok", KEYS]
    without_tasks = ok_jobs.merge(task_jobs, on=KEYS, how="left", indicator=True)
    without_tasks = without_tasks["_merge"] == "left_only"
    if without_tasks.any():
        raise ValueError(
            "jobs with status 'ok' have no rows in the tasks table: "
            + _describe_rows(ok_jobs.reset_index(drop=True), without_tasks, KEYS)
        )

    # is_straggler must follow the job's threshold (latency >= straggler_threshold)
    threshold = (
        tasks[KEYS]
        .merge(jobs[KEYS + ["straggler_threshold"]], on=KEYS, how="left")["straggler_threshold"]
        .to_numpy(float)
    )
    expected = tasks["latency"].to_numpy(float) >= threshold
    mismatch = expected != tasks["is_straggler"].to_numpy()
    if mismatch.any():
        raise ValueError(
            f"tasks table: is_straggler disagrees with latency >= straggler_threshold on "
            f"{int(mismatch.sum())} rows, e.g. "
            + _describe_rows(tasks, mismatch, KEYS + ["task", "latency", "is_straggler"])
        )


def load_predictions(
    task_paths: Sequence[str], job_paths: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Concatenate the replay's Parquet prediction files and check them."""
    tasks, jobs = read_predictions(task_paths, job_paths)
    validate_predictions(tasks, jobs)
    return tasks, jobs


def read_predictions(
    task_paths: Sequence[str], job_paths: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`load_predictions` without the check."""
    if not task_paths or not job_paths:
        raise ValueError("load_predictions needs at least one tasks file and one jobs file")
    tasks = pd.concat([pd.read_parquet(p) for p in task_paths], ignore_index=True)
    jobs = pd.concat([pd.read_parquet(p) for p in job_paths], ignore_index=True)
    for frame in (tasks, jobs):
        for column in ("dataset", "method", "job_id"):
            if column in frame:
                frame[column] = frame[column].astype(str)
    return tasks, jobs


# ---------------------------------------------------------------------------------------
# per-job metrics and Table 3


def _job_counts(tasks: pd.DataFrame) -> pd.DataFrame:
    """Per job: n_tasks, n_evaluated and the confusion matrix over evaluated tasks."""
    evaluated = tasks["evaluated"].to_numpy(bool)
    truth = tasks["is_straggler"].to_numpy(bool) & evaluated
    predicted = tasks["flagged"].to_numpy(bool) & evaluated
    negative = ~tasks["is_straggler"].to_numpy(bool) & evaluated
    counts = pd.DataFrame(
        {
            **{k: tasks[k].to_numpy() for k in KEYS},
            "n_tasks": 1,
            "n_evaluated": evaluated.astype(np.int64),
            "tp": (truth & predicted).astype(np.int64),
            "fp": (negative & predicted).astype(np.int64),
            "fn": (truth & ~predicted).astype(np.int64),
            "tn": (negative & ~predicted).astype(np.int64),
        }
    )
    return counts.groupby(KEYS, sort=False, observed=True).sum().reset_index()


METRIC_COLUMNS = ["TPR", "FPR", "FNR", "precision", "F1"]
COUNT_COLUMNS = ["n_tasks", "n_evaluated", "n_stragglers", "n_flagged", "tp", "fp", "fn", "tn"]


def job_metrics(tasks: pd.DataFrame, jobs: pd.DataFrame, validated: bool = False) -> pd.DataFrame:
    """One row per (dataset, method, job): counts, rates and status.

    status is "ok" (scored), "failed" (method failed; no counts, no metrics) or "unscorable"
    (ran, but no evaluated straggler, so TPR/F1 are undefined; see the module docstring).
    `validated=True` skips `validate_predictions` (the tables came from `load_predictions`).
    """
    if not validated:
        validate_predictions(tasks, jobs)
    counts = _job_counts(tasks)
    base = jobs[KEYS + ["family", "privileged", "status", "reason"]].reset_index(drop=True)
    out = base.merge(counts, on=KEYS, how="left")
    out["n_stragglers"] = out["tp"] + out["fn"]
    out["n_flagged"] = out["tp"] + out["fp"]
    for column in COUNT_COLUMNS:
        out[column] = out[column].astype("Int64")  # failed jobs: <NA>

    ran = out["status"] == "ok"
    metric_values = {c: np.full(len(out), np.nan) for c in METRIC_COLUMNS}
    if ran.any():
        computed = rates(*(out.loc[ran, c].to_numpy(float) for c in ("tp", "fp", "fn", "tn")))
        for column in METRIC_COLUMNS:
            metric_values[column][ran.to_numpy()] = computed[column]
    for column in METRIC_COLUMNS:
        out[column] = metric_values[column]
    unscorable = ran & (out["n_stragglers"].fillna(0) == 0)
    out.loc[unscorable, "status"] = "unscorable"
    columns = KEYS[:2] + ["family", "privileged", "job_id", "status", "reason"]
    return sort_rows(out[columns + COUNT_COLUMNS + METRIC_COLUMNS], extra=["job_id"])


def summary_table(
    job_metrics: pd.DataFrame, dataset_order: Sequence[str] | None = None
) -> pd.DataFrame:
    """Table 3 in long form: one row per (dataset, method), ordered as in the paper.

    Means are over scored jobs (status "ok"); failed and unscorable jobs are only counted.
    """
    _require_columns(
        job_metrics, KEYS + ["family", "privileged", "status"] + METRIC_COLUMNS, "job metrics"
    )
    frame = job_metrics.copy()
    status = frame["status"]
    frame["_scored"] = status == "ok"
    frame["_failed"] = status == "failed"
    frame["_unscorable"] = status == "unscorable"
    frame["_fpr_undefined"] = frame["_scored"] & frame["FPR"].isna()
    group_keys = ["dataset", "method"]
    grouped = frame.groupby(group_keys, sort=False, observed=True)
    out = grouped.agg(
        family=("family", "first"),
        privileged=("privileged", "first"),
        jobs_evaluated=("_scored", "sum"),
        jobs_failed=("_failed", "sum"),
        jobs_unscorable=("_unscorable", "sum"),
        jobs_fpr_undefined=("_fpr_undefined", "sum"),
    )
    scored = frame[frame["_scored"]]
    means = scored.groupby(group_keys, sort=False, observed=True)[METRIC_COLUMNS].mean()
    f1_std = scored.groupby(group_keys, sort=False, observed=True)["F1"].std(ddof=1)
    out = out.join(means).join(f1_std.rename("F1_std")).reset_index()
    for column in ("jobs_evaluated", "jobs_failed", "jobs_unscorable", "jobs_fpr_undefined"):
        out[column] = out[column].astype(np.int64)
    return sort_rows(out, dataset_order=dataset_order)


# ---------------------------------------------------------------------------------------
# F1 over normalised time (Figures 2-3)


def checked_n_points(n_points) -> int:
    """`n_points` as an int; ValueError unless it is a positive integer."""
    if int(n_points) != n_points or n_points < 1:
        raise ValueError(f"n_points must be a positive integer, got {n_points!r}")
    return int(n_points)


def scored_spans(jobs: pd.DataFrame) -> pd.DataFrame:
    """The jobs that ran ok: keys, family, privileged, job_start and job_end; ValueError
    naming the rows whose job_end is not after job_start."""
    spans = jobs.loc[
        jobs["status"] == "ok", KEYS + ["family", "privileged", "job_start", "job_end"]
    ]
    bad_span = ~(spans["job_end"] > spans["job_start"])
    if bad_span.any():
        raise ValueError(
            "jobs table: job_end must be after job_start: "
            + _describe_rows(spans, bad_span, KEYS + ["job_start", "job_end"])
        )
    return spans


def f1_over_time(
    tasks: pd.DataFrame, jobs: pd.DataFrame, n_points: int = 10, validated: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """F1 at normalised times k / n_points, k = 1..n_points, of every scored job.

    At t_k = job_start + k / n_points * (job_end - job_start) a task is a predicted positive
    iff it was flagged with flag_time <= t_k; truth is all of the job's evaluated stragglers
    (including those not yet finished or started). Only jobs that ran and have at least one
    evaluated straggler are included (failed and unscorable jobs are counted in the summary).

    Returns (per_job, mean): per_job has one row per (dataset, method, job_id, k) with tp, fp,
    fn, tn, TPR, FPR, F1; mean has one row per (dataset, method, k) with the mean and std of
    F1 over jobs, mean TPR and FPR, and n_jobs. `validated` as in `job_metrics`.
    """
    n_points = checked_n_points(n_points)
    if not validated:
        validate_predictions(tasks, jobs)
    scored = tasks[tasks["evaluated"].to_numpy(bool)]
    spans = scored_spans(jobs)
    rows = scored[KEYS + ["is_straggler", "flag_time"]].merge(spans, on=KEYS, how="left")

    fractions = np.arange(1, n_points + 1) / n_points
    job_start = rows["job_start"].to_numpy(float)[:, None]
    job_end = rows["job_end"].to_numpy(float)[:, None]
    # the last point is exactly job_end, free of rounding in start + 1.0 * span
    times = np.where(fractions == 1.0, job_end, job_start + fractions * (job_end - job_start))
    # NaN flag_time (never flagged) compares False: never a predicted positive
    predicted = rows["flag_time"].to_numpy(float)[:, None] <= times
    truth = rows["is_straggler"].to_numpy(bool)[:, None]

    # sort=False numbers groups by first appearance, the order drop_duplicates keeps
    group_ids = rows.groupby(KEYS, sort=False, observed=True).ngroup().to_numpy()
    job_keys = rows[KEYS].drop_duplicates().reset_index(drop=True)
    n_groups = len(job_keys)

    def per_group(values: np.ndarray) -> np.ndarray:
        # per-column bincount: one pass per checkpoint, fast on millions of rows
        return np.stack(
            [
                np.bincount(group_ids, weights=values[:, j], minlength=n_groups)
                for j in range(values.shape[1])
            ],
            axis=1,
        ).astype(np.int64)

    tp = per_group(truth & predicted)
    fp = per_group(~truth & predicted)
    stragglers = per_group(truth)
    negatives = per_group(~truth)
    fn = stragglers - tp
    tn = negatives - fp
    computed = rates(tp, fp, fn, tn)

    per_job = pd.DataFrame(
        {
            **{k: np.repeat(job_keys[k].to_numpy(), n_points) for k in KEYS},
            "k": np.tile(np.arange(1, n_points + 1), n_groups),
            "normalised_time": np.tile(fractions, n_groups),
            "tp": tp.ravel(),
            "fp": fp.ravel(),
            "fn": fn.ravel(),
            "tn": tn.ravel(),
            "TPR": computed["TPR"].ravel(),
            "FPR": computed["FPR"].ravel(),
            "F1": computed["F1"].ravel(),
        }
    )
    per_job = per_job[np.repeat(stragglers[:, 0] > 0, n_points)]  # unscorable jobs out
    per_job = per_job.merge(spans[KEYS + ["family", "privileged"]], on=KEYS, how="left")
    per_job = per_job[
        KEYS[:2]
        + [
            "family",
            "privileged",
            "job_id",
            "k",
            "normalised_time",
            "tp",
            "fp",
            "fn",
            "tn",
            "TPR",
            "FPR",
            "F1",
        ]
    ]
    per_job = sort_rows(per_job, extra=["job_id", "k"])

    mean = (
        per_job.groupby(["dataset", "method", "k"], sort=False, observed=True)
        .agg(
            family=("family", "first"),
            privileged=("privileged", "first"),
            normalised_time=("normalised_time", "first"),
            F1=("F1", "mean"),
            F1_std=("F1", "std"),
            TPR=("TPR", "mean"),
            FPR=("FPR", "mean"),
            n_jobs=("job_id", "nunique"),
        )
        .reset_index()
    )
    mean = mean[
        [
            "dataset",
            "method",
            "family",
            "privileged",
            "k",
            "normalised_time",
            "F1",
            "F1_std",
            "TPR",
            "FPR",
            "n_jobs",
        ]
    ]
    return per_job, sort_rows(mean, extra=["k"])


# ---------------------------------------------------------------------------------------
# cost


def cost_table(jobs: pd.DataFrame, by_dataset: bool = True) -> pd.DataFrame:
    """Wall time of each method: per job (mean, std, total) and per checkpoint.

    All jobs a method was run on count, failed ones included (their time was spent too);
    seconds_per_checkpoint is total seconds / total checkpoints (NaN when no checkpoint).
    """
    _require_columns(
        jobs,
        ["dataset", "method", "family", "privileged", "status", "seconds", "n_checkpoints"],
        "jobs",
    )
    group_keys = ["dataset", "method"] if by_dataset else ["method"]
    frame = jobs.assign(_failed=jobs["status"] == "failed")
    out = (
        frame.groupby(group_keys, sort=False, observed=True)
        .agg(
            family=("family", "first"),
            privileged=("privileged", "first"),
            jobs=("seconds", "size"),
            jobs_failed=("_failed", "sum"),
            seconds_total=("seconds", "sum"),
            seconds_per_job=("seconds", "mean"),
            seconds_per_job_std=("seconds", "std"),
            checkpoints_total=("n_checkpoints", "sum"),
        )
        .reset_index()
    )
    out["jobs_failed"] = out["jobs_failed"].astype(np.int64)
    checkpoints = out["checkpoints_total"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["seconds_per_checkpoint"] = np.where(
            checkpoints > 0, out["seconds_total"].to_numpy(float) / checkpoints, np.nan
        )
    return sort_rows(out)
