"""How early a flag came: lead, early flags, early-TPR / early-F1, early share, median lead.

Works on the replay's prediction tables (`stragglers.formats.predictions`), never on method
code. A flag is early when it is raised before the task's elapsed time reaches its job's
threshold tau, i.e. before the label could be read off the clock; a late flag is therefore
always on a true straggler. The definitions: docs/definitions.md ("How early: lead and early
flags").
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from stragglers.evaluate.metrics import (
    checked_n_points,
    f1_over_time,
    rates,
    read_predictions,
    scored_spans,
    sort_rows,
    validate_predictions,
)
from stragglers.formats.predictions import KEYS

TIMING_COLUMNS = [
    "early_tp",
    "early_fp",
    "early_fn",
    "early_tn",
    "early_TPR",
    "early_precision",
    "early_F1",
    "early_share",
    "median_lead",
]
LEAD_COLUMNS = [
    "dataset",
    "method",
    "family",
    "privileged",
    "job_id",
    "task",
    "task_start",
    "task_end",
    "flag_time",
    "elapsed_at_flag",
    "straggler_threshold",
    "lead",
    "early",
]


def flag_lead(task_start, task_end, flag_time) -> np.ndarray:
    """(task_end - flag_time) / (task_end - task_start); NaN where not flagged or latency 0."""
    start = np.asarray(task_start, dtype=np.float64)
    end = np.asarray(task_end, dtype=np.float64)
    flag = np.asarray(flag_time, dtype=np.float64)
    latency = end - start
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(latency > 0, (end - flag) / latency, np.nan)


def early_flags(task_start, flag_time, straggler_threshold) -> np.ndarray:
    """True where a flag was raised while elapsed time (flag - start) was below tau."""
    elapsed = np.asarray(flag_time, dtype=np.float64) - np.asarray(task_start, dtype=np.float64)
    return elapsed < np.asarray(straggler_threshold, dtype=np.float64)  # NaN flag -> False


def _scored_rows(tasks: pd.DataFrame, jobs: pd.DataFrame) -> pd.DataFrame:
    """Evaluated task rows of jobs that ran, with their job's threshold, family and flags."""
    scored = tasks[tasks["evaluated"].to_numpy(bool)]
    job_part = jobs.loc[
        jobs["status"] == "ok", KEYS + ["family", "privileged", "straggler_threshold"]
    ]
    rows = scored.merge(job_part, on=KEYS, how="inner")
    rows["early"] = early_flags(rows["task_start"], rows["flag_time"], rows["straggler_threshold"])
    rows["lead"] = flag_lead(rows["task_start"], rows["task_end"], rows["flag_time"])
    return rows


def flag_leads(
    tasks: pd.DataFrame,
    jobs: pd.DataFrame,
    validated: bool = False,
    scored: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per flagged, evaluated true straggler: its lead and whether the flag was early.

    `validated=True` skips `validate_predictions` (the tables came from `load_predictions`);
    `scored`: `_scored_rows(tasks, jobs)` when the caller has it (read, never changed)."""
    if not validated:
        validate_predictions(tasks, jobs)
    rows = _scored_rows(tasks, jobs) if scored is None else scored
    hits = rows[rows["flagged"].to_numpy(bool) & rows["is_straggler"].to_numpy(bool)].copy()
    hits["elapsed_at_flag"] = hits["flag_time"] - hits["task_start"]
    return sort_rows(hits[LEAD_COLUMNS].reset_index(drop=True), extra=["job_id", "task"])


def timing_job_metrics(
    tasks: pd.DataFrame,
    jobs: pd.DataFrame,
    validated: bool = False,
    scored: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per (dataset, method, job_id) of every job in `jobs`: the early confusion matrix,
    early-TPR/precision/F1, early share and the job's median lead (NaN: failed, unscorable
    or, for the lead, no straggler found). `validated`, `scored` as in `flag_leads`."""
    if not validated:
        validate_predictions(tasks, jobs)
    rows = _scored_rows(tasks, jobs) if scored is None else scored
    truth = rows["is_straggler"].to_numpy(bool)
    flagged = rows["flagged"].to_numpy(bool)
    early = rows["early"].to_numpy(bool) & flagged
    counts = pd.DataFrame(
        {
            **{k: rows[k].to_numpy() for k in KEYS},
            "early_tp": (truth & early).astype(np.int64),
            "early_fp": (~truth & early).astype(np.int64),
            "early_fn": (truth & ~early).astype(np.int64),
            "early_tn": (~truth & ~early).astype(np.int64),
            "tp": (truth & flagged).astype(np.int64),
            "lead": np.where(truth & flagged, rows["lead"].to_numpy(float), np.nan),
        }
    )
    grouped = counts.groupby(KEYS, sort=False, observed=True)
    per_job = grouped[["early_tp", "early_fp", "early_fn", "early_tn", "tp"]].sum()
    per_job["median_lead"] = grouped["lead"].median()
    per_job = per_job.reset_index()
    out = jobs[KEYS].merge(per_job, on=KEYS, how="left")
    has_stragglers = (out["early_tp"] + out["early_fn"]).fillna(0).to_numpy() > 0
    computed = rates(
        *(
            out[c].fillna(0).to_numpy(float)
            for c in ("early_tp", "early_fp", "early_fn", "early_tn")
        )
    )
    out["early_TPR"] = np.where(has_stragglers, computed["TPR"], np.nan)
    out["early_precision"] = np.where(has_stragglers, computed["precision"], np.nan)
    out["early_F1"] = np.where(has_stragglers, computed["F1"], np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["early_share"] = np.where(out["tp"].fillna(0) > 0, out["early_tp"] / out["tp"], np.nan)
    out["median_lead"] = np.where(has_stragglers, out["median_lead"], np.nan)
    for column in ("early_tp", "early_fp", "early_fn", "early_tn"):
        out[column] = out[column].astype("Int64")
    return out[KEYS + TIMING_COLUMNS]


def timing_summary(job_metrics: pd.DataFrame, leads: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, method): mean early-TPR and early-F1 over scored jobs (status "ok" in
    `job_metrics`, which must carry the TIMING_COLUMNS), early share and median lead over the
    pooled flagged stragglers of those jobs, and how many stragglers were flagged."""
    missing = [c for c in KEYS + ["status", "early_TPR", "early_F1"] if c not in job_metrics]
    if missing:
        raise ValueError(f"job metrics lack timing columns {missing}")
    scored = job_metrics[job_metrics["status"] == "ok"]
    group = ["dataset", "method"]
    out = (
        scored.groupby(group, sort=False, observed=True)
        .agg(
            early_TPR=("early_TPR", "mean"),
            early_F1=("early_F1", "mean"),
            early_F1_std=("early_F1", "std"),
        )
        .reset_index()
    )
    pooled = leads.merge(scored[KEYS], on=KEYS, how="inner")
    lead_stats = (
        pooled.groupby(group, sort=False, observed=True)
        .agg(
            stragglers_flagged=("lead", "size"),
            early_share=("early", "mean"),
            median_lead=("lead", "median"),
        )
        .reset_index()
    )
    everything = job_metrics[group].drop_duplicates()
    out = everything.merge(out, on=group, how="left").merge(lead_stats, on=group, how="left")
    out["stragglers_flagged"] = out["stragglers_flagged"].fillna(0).astype(np.int64)
    return out


def lead_over_time(
    tasks: pd.DataFrame,
    jobs: pd.DataFrame,
    n_points: int = 10,
    validated: bool = False,
    scored: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Early-F1 and lead at the normalised times of `evaluate.f1_over_time`.

    At t_k = job_start + k / n_points * (job_end - job_start): early_F1 counts only early
    flags raised by t_k as positives; median_lead is the median lead of the true stragglers
    flagged by t_k (NaN if none yet). Returns (per_job, mean) keyed like f1_over_time's
    frames (dataset, method, job_id, k) / (dataset, method, k); mean has the mean early_F1
    over jobs and the median lead over the pooled flagged stragglers of all jobs.
    `validated`, `scored` as in `flag_leads`.
    """
    n_points = checked_n_points(n_points)
    if not validated:
        validate_predictions(tasks, jobs)
    rows = (_scored_rows(tasks, jobs) if scored is None else scored).merge(
        jobs[KEYS + ["job_start", "job_end"]], on=KEYS, how="left"
    )
    fractions = np.arange(1, n_points + 1) / n_points
    start = rows["job_start"].to_numpy(float)[:, None]
    end = rows["job_end"].to_numpy(float)[:, None]
    times = np.where(fractions == 1.0, end, start + fractions * (end - start))
    flagged_by = rows["flag_time"].to_numpy(float)[:, None] <= times  # NaN -> False
    truth = rows["is_straggler"].to_numpy(bool)[:, None]
    early = rows["early"].to_numpy(bool)[:, None] & flagged_by
    group_ids = rows.groupby(KEYS, sort=False, observed=True).ngroup().to_numpy()
    job_keys = rows[KEYS].drop_duplicates().reset_index(drop=True)
    n_groups = len(job_keys)

    def per_group(values: np.ndarray) -> np.ndarray:
        return np.stack(
            [
                np.bincount(group_ids, weights=values[:, j], minlength=n_groups)
                for j in range(values.shape[1])
            ],
            axis=1,
        )

    early_tp = per_group(truth & early)
    early_fp = per_group(~truth & early)
    stragglers = per_group(np.broadcast_to(truth, early.shape))
    computed = rates(
        early_tp,
        early_fp,
        stragglers - early_tp,
        per_group(np.broadcast_to(~truth, early.shape)) - early_fp,
    )
    # leads of the true stragglers flagged by each t_k, in long form: (job group, k, lead)
    hit_row, hit_k = np.nonzero(truth & flagged_by)
    hits = pd.DataFrame(
        {"g": group_ids[hit_row], "k": hit_k + 1, "lead": rows["lead"].to_numpy(float)[hit_row]}
    )
    per_job_lead = np.full((n_groups, n_points), np.nan)
    if len(hits):
        medians = hits.groupby(["g", "k"], sort=False)["lead"].median()
        g_index = medians.index.get_level_values("g").to_numpy()
        k_index = medians.index.get_level_values("k").to_numpy()
        per_job_lead[g_index, k_index - 1] = medians.to_numpy()
    per_job = pd.DataFrame(
        {
            **{k: np.repeat(job_keys[k].to_numpy(), n_points) for k in KEYS},
            "k": np.tile(np.arange(1, n_points + 1), n_groups),
            "early_F1": computed["F1"].ravel(),
            "early_TPR": computed["TPR"].ravel(),
            "median_lead": per_job_lead.ravel(),
        }
    )
    scorable_job = stragglers[:, 0] > 0
    per_job = per_job[np.repeat(scorable_job, n_points)].reset_index(drop=True)
    # pooled median lead per (dataset, method, k) over the scorable jobs' flagged stragglers
    hits = hits[scorable_job[hits["g"].to_numpy()]]
    pooled = (
        hits.assign(
            dataset=job_keys["dataset"].to_numpy()[hits["g"].to_numpy()],
            method=job_keys["method"].to_numpy()[hits["g"].to_numpy()],
        )
        .groupby(["dataset", "method", "k"], sort=False)["lead"]
        .median()
        .rename("median_lead")
        .reset_index()
    )
    mean = (
        per_job.groupby(["dataset", "method", "k"], sort=False, observed=True)
        .agg(early_F1=("early_F1", "mean"), early_TPR=("early_TPR", "mean"))
        .reset_index()
    )
    mean = mean.merge(pooled, on=["dataset", "method", "k"], how="left")
    return per_job, mean


# Prediction rows checked and scored in one batch at most (several methods' at the default
# size, where a method's own pandas calls cost more than its rows; one method's at the full
# size).
BATCH_TASK_ROWS = 250_000


def dataset_scores(
    task_files: list[str], job_files: list[str], n_points: int
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Every method's prediction files of one dataset scored: per-job metrics with how early
    the flags came, F1 and lead over normalised time per job and their mean, and every
    flagged straggler's lead (a method's files: those in its folder); the frames of each
    method's scores concatenated in the files' order.

    The methods are read one at a time, then checked and scored in batches of at most
    BATCH_TASK_ROWS prediction rows (or one method's), so memory is bounded by a batch; a
    batch gives each method's rows as that method scored alone (`_batch_scores`), and
    raises the error that reading, checking and scoring one method after the other raises
    first (`_check_batch`)."""
    by_method: dict[str, tuple[list[str], list[str]]] = {}
    for path in task_files:
        by_method.setdefault(Path(path).parent.name, ([], []))[0].append(path)
    for path in job_files:
        by_method.setdefault(Path(path).parent.name, ([], []))[1].append(path)
    frames: tuple[list, list, list, list] = ([], [], [], [])
    batch: list[tuple[pd.DataFrame, pd.DataFrame]] = []

    def score_batch() -> None:
        for found, scores in zip(frames, _batch_scores(batch, n_points), strict=True):
            found.append(scores)
        batch.clear()

    for method_tasks, method_jobs in by_method.values():
        # the batch is scored before a method that would not fit in it is read (its rows
        # counted from the files' footers), so a batch of one method holds only its tables
        if batch and (
            sum(len(t) for t, _ in batch) + _parquet_rows(method_tasks) > BATCH_TASK_ROWS
        ):
            score_batch()
        try:
            tasks, jobs = read_predictions(method_tasks, method_jobs)
        except Exception:
            # the methods read before were checked before this one was read
            _check_members(batch, n_points)
            raise
        batch.append((tasks, jobs))
        del tasks, jobs
    if batch:
        score_batch()
    return tuple(pd.concat(found, ignore_index=True) for found in frames)


def _parquet_rows(paths: list[str]) -> float:
    """The rows of Parquet files, from their footers; infinite when one cannot be read (its
    error is left to reading it)."""
    import pyarrow.parquet as pq

    try:
        return sum(pq.read_metadata(path).num_rows for path in paths)
    except Exception:
        return math.inf


def _method_scores(
    tasks: pd.DataFrame, jobs: pd.DataFrame, n_points: int
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """dataset_scores's four frames for checked prediction tables (`_check_members`)."""
    # the scoring function under another name: this module's `job_metrics` are its frames
    from stragglers.evaluate.metrics import job_metrics as score_jobs

    # the scored rows built once for the three timing scores
    scored = _scored_rows(tasks, jobs)
    metrics = score_jobs(tasks, jobs, validated=True).merge(
        timing_job_metrics(tasks, jobs, validated=True, scored=scored), on=KEYS, how="left"
    )
    per_job, mean = f1_over_time(tasks, jobs, n_points=n_points, validated=True)
    lead_per_job, lead_mean = lead_over_time(
        tasks, jobs, n_points=n_points, validated=True, scored=scored
    )
    return (
        metrics,
        per_job.merge(lead_per_job, on=[*KEYS, "k"], how="left"),
        mean.merge(lead_mean, on=["dataset", "method", "k"], how="left"),
        flag_leads(tasks, jobs, validated=True, scored=scored),
    )


def _check_members(batch: list[tuple[pd.DataFrame, pd.DataFrame]], n_points: int) -> None:
    """The checks of each method's tables, one method after the other: what scoring each
    method as soon as it was read checked (its predictions, then the number of points and
    the jobs' spans of f1_over_time)."""
    for tasks, jobs in batch:
        validate_predictions(tasks, jobs)
        checked_n_points(n_points)
        scored_spans(jobs)


def _method_places(batch: list[tuple[pd.DataFrame, pd.DataFrame]]) -> dict[str, int] | None:
    """Each method's place in `batch` when the batch's tables can be checked and scored
    together: one dataset, and no method in two members (not in their tasks nor in their
    jobs, so no row of one member can meet a row of another); None otherwise."""
    if len(batch) < 2:
        return None
    places: dict[str, int] = {}
    datasets: set = set()
    for place, (tasks, jobs) in enumerate(batch):
        for frame in (tasks, jobs):
            datasets.update(pd.unique(frame["dataset"]))
            for method in pd.unique(frame["method"]):
                if places.setdefault(method, place) != place:
                    return None
    return places if len(datasets) == 1 else None


def _batch_scores(
    batch: list[tuple[pd.DataFrame, pd.DataFrame]], n_points: int
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """`_method_scores` of each (tasks, jobs) of `batch`, checked (`_check_members`),
    concatenated; computed on the tables concatenated when `_method_places` allows it.

    Then every check and score is per row, per job or per (dataset, method), so the
    concatenated tables pass the checks exactly when every member passes them (if not, the
    members are checked one after the other for the error raised first), and each output
    is ordered by `sort_rows` or by first appearance: each method's rows come out as scored
    alone once put back in the methods' order (a stable sort by the method's place)."""
    places = _method_places(batch)
    if places is not None:
        tasks = pd.concat([t for t, _ in batch], ignore_index=True)
        jobs = pd.concat([j for _, j in batch], ignore_index=True)
        try:
            _check_members([(tasks, jobs)], n_points)
        except ValueError:
            places = None
    if places is None:
        _check_members(batch, n_points)
        scores = [_method_scores(tasks, jobs, n_points) for tasks, jobs in batch]
        return tuple(pd.concat(found, ignore_index=True) for found in zip(*scores, strict=True))

    def in_method_order(frame: pd.DataFrame) -> pd.DataFrame:
        place = frame["method"].map(places).to_numpy()
        return frame.take(np.argsort(place, kind="stable")).reset_index(drop=True)

    return tuple(in_method_order(frame) for frame in _method_scores(tasks, jobs, n_points))
