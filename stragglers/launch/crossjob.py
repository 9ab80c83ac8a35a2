"""The cross-job, launch-time protocol (Wrangler §3, MTL paper §5), with no look at the future:
a model that predicts at time t trains only on tasks of jobs finished by t, and
`training_rows` is the one place that selects them and checks the rule. `online_predictions`
predicts every job at its start (the replay's format, so Table 3's scoring applies);
`learning_curve` is the MTL paper's Table 5 / Figure 3, with unseen nodes and workloads
(§4.8). Scaling, balance and the curve's split: docs/methods.md ("Launch-time, cross-job
protocol").
"""

from __future__ import annotations

import logging
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from stragglers.evaluate.metrics import confusion, rates
from stragglers.launch.methods.base import LaunchMethod
from stragglers.launch.tasks import job_threshold, straggler_labels

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LaunchSettings:
    workload: str
    label: str = "p90"
    straggler_quantile: float = 0.9
    wrangler_beta: float = 1.3
    train_shares: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
    min_train_tasks: int = 50  # fewer finished tasks (or one class only): no model, no flags
    refit_every: int = 1  # refit once this many more jobs have finished
    history_jobs: int = 50  # online: train on the latest this many finished jobs (bounded cost)
    oversample: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        shares = np.asarray(self.train_shares, dtype=float)
        if len(shares) == 0 or np.any((shares <= 0) | (shares >= 1)):
            raise ValueError(
                f"launch.train_shares: each share must be in (0, 1), got {list(self.train_shares)}"
            )
        if self.min_train_tasks < 2 or self.refit_every < 1 or self.history_jobs < 1:
            raise ValueError(
                "launch.min_train_tasks must be >= 2, launch.refit_every and launch.history_jobs >= 1"
            )


def add_labels(tasks: pd.DataFrame, settings: LaunchSettings) -> pd.DataFrame:
    codes = pd.factorize(tasks["job_id"])[0]
    return tasks.assign(
        straggler=straggler_labels(
            tasks["latency"].to_numpy(),
            codes,
            settings.label,
            settings.straggler_quantile,
            settings.wrangler_beta,
        )
    )


def training_rows(
    tasks: pd.DataFrame, prediction_time: float, max_jobs: int | None = None
) -> np.ndarray:
    """Positions of the tasks of jobs finished by `prediction_time` (job_end <= t); with
    `max_jobs`, only those of the latest `max_jobs` of them to finish."""
    job_end = tasks["job_end"].to_numpy(float)
    rows = np.flatnonzero(job_end <= prediction_time)
    if max_jobs is not None and len(rows):
        ends = np.unique(job_end[rows])
        if len(ends) > max_jobs:  # (ties on job_end keep every tied job)
            rows = rows[job_end[rows] >= ends[-max_jobs]]
    if len(rows) and job_end[rows].max() > prediction_time:
        raise AssertionError("a training row of a job not finished by the prediction time")
    return rows


class Standardiser:
    """Column means and s.d. of the training rows; NaN -> the training mean (0 after)."""

    def __init__(self, X: np.ndarray):
        # a column without any value (a counter the trace leaves empty) has mean 0, s.d. 1
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            self.mean = np.nan_to_num(np.nanmean(X, axis=0)) if len(X) else np.zeros(X.shape[1])
            sd = np.nanstd(X, axis=0) if len(X) else np.ones(X.shape[1])
        self.sd = np.where(np.isnan(sd) | (sd == 0), 1.0, sd)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return np.nan_to_num((X - self.mean) / self.sd, nan=0.0)


def oversample_stragglers(straggler: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row indices with the minority class drawn with replacement up to the majority's size."""
    straggler = np.asarray(straggler, dtype=bool)
    positive, negative = np.flatnonzero(straggler), np.flatnonzero(~straggler)
    if len(positive) == 0 or len(negative) == 0:
        return np.arange(len(straggler))
    minority, majority = (
        (positive, negative) if len(positive) < len(negative) else (negative, positive)
    )
    extra = rng.choice(minority, len(majority) - len(minority), replace=True)
    return np.sort(np.concatenate([majority, minority, extra]))


@dataclass
class FittedModel:
    model: LaunchMethod | None  # None: not enough data (no flags)
    scale: Standardiser | None
    n_train: int
    n_train_jobs: int
    reason: str = ""

    def predict(self, tasks: pd.DataFrame, features: list[str]) -> np.ndarray:
        if self.model is None:
            return np.zeros(len(tasks), dtype=bool)
        X = self.scale(tasks[features].to_numpy(float))
        predicted = np.asarray(
            self.model.predict(X, tasks["node"].to_numpy(), tasks["workload"].to_numpy())
        )
        if predicted.shape != (len(tasks),) or predicted.dtype != bool:
            raise ValueError(
                f"launch method {self.model.name} returned {predicted.dtype} {predicted.shape}, "
                f"expected bool ({len(tasks)},)"
            )
        return predicted


def fit_model(
    tasks: pd.DataFrame,
    features: list[str],
    rows: np.ndarray,
    method_class: type[LaunchMethod],
    params: dict[str, Any],
    settings: LaunchSettings,
    seed: int,
) -> FittedModel:
    train = tasks.iloc[rows]
    n_jobs = int(train["job_id"].nunique())
    labels = train["straggler"].to_numpy(bool)
    if len(train) < settings.min_train_tasks or labels.all() or not labels.any():
        reason = f"no model: {len(train)} finished tasks, {int(labels.sum())} stragglers"
        return FittedModel(None, None, len(train), n_jobs, reason)
    scale = Standardiser(train[features].to_numpy(float))
    picked = np.arange(len(train))
    if settings.oversample:
        picked = oversample_stragglers(labels, np.random.default_rng(seed))
    model = method_class(params, seed=seed)
    model.feature_names = list(features)
    model.fit(
        scale(train[features].to_numpy(float))[picked],
        labels[picked],
        train["node"].to_numpy()[picked],
        train["workload"].to_numpy()[picked],
    )
    return FittedModel(model, scale, len(train), n_jobs)


def online_predictions(
    tasks: pd.DataFrame,
    features: list[str],
    method_class: type[LaunchMethod],
    params: dict[str, Any],
    settings: LaunchSettings,
    seed: int,
    dataset: str,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(tasks, jobs) in the replay's result format; `tasks` labelled (`add_labels`)."""
    from stragglers.formats.predictions import JOB_COLUMNS, TASK_COLUMNS
    from stragglers.replay.core import derive_seed

    jobs = tasks.groupby("job_id", sort=False).agg(
        job_start=("job_start", "first"), job_end=("job_end", "first")
    )
    jobs = jobs.reset_index().sort_values(["job_start", "job_id"], kind="stable", ignore_index=True)
    fitted: FittedModel | None = None
    fitted_at_jobs = -1
    job_ends = np.sort(jobs["job_end"].to_numpy(float))  # how many jobs finished by t
    task_frames, job_rows = [], []
    by_job = {job_id: frame for job_id, frame in tasks.groupby("job_id", sort=False)}
    for job in jobs.itertuples():
        began = time.perf_counter()
        frame = by_job[job.job_id].sort_values("task")
        row = {
            "dataset": dataset,
            "method": method_class.name,
            "family": method_class.family,
            "privileged": False,
            "job_id": job.job_id,
            "n_tasks": len(frame),
            "n_checkpoints": 1,
            "straggler_threshold": job_threshold(
                frame["latency"].to_numpy(float),
                settings.label,
                settings.straggler_quantile,
                settings.wrangler_beta,
            ),
            "prediction_start": float(job.job_start),
            "job_start": float(job.job_start),
            "job_end": float(job.job_end),
        }
        try:
            n_finished_jobs = int(np.searchsorted(job_ends, float(job.job_start), side="right"))
            if fitted is None or n_finished_jobs - fitted_at_jobs >= settings.refit_every:
                rows = training_rows(tasks, float(job.job_start), settings.history_jobs)
                fitted = fit_model(
                    tasks,
                    features,
                    rows,
                    method_class,
                    params,
                    settings,
                    derive_seed(seed, "launch", method_class.name, str(job.job_id)),
                )
                fitted_at_jobs = n_finished_jobs
            predicted = fitted.predict(frame, features)
        except Exception as error:  # reported as failed, never silently dropped
            row.update(
                status="failed",
                reason=f"{type(error).__name__}: {error}",
                seconds=time.perf_counter() - began,
            )
            row["trace"] = traceback.format_exc(limit=3)
            job_rows.append(row)
            continue
        row.update(
            status="ok",
            reason=fitted.reason,
            seconds=time.perf_counter() - began,
            n_train_tasks=fitted.n_train,
            n_train_jobs=fitted.n_train_jobs,
        )
        job_rows.append(row)
        start = frame["task_start"].to_numpy(float)
        task_frames.append(
            pd.DataFrame(
                {
                    "dataset": dataset,
                    "method": method_class.name,
                    "job_id": job.job_id,
                    "task": frame["task"].to_numpy(),
                    "latency": frame["latency"].to_numpy(float),
                    "task_start": start,
                    "task_end": frame["task_end"].to_numpy(float),
                    "is_straggler": frame["straggler"].to_numpy(bool),
                    "evaluated": True,
                    "flagged": predicted,
                    "flag_time": np.where(predicted, start, np.nan),
                    "resume_attempts": np.nan,
                }
            )
        )
    task_table = (
        pd.concat(task_frames, ignore_index=True)
        if task_frames
        else pd.DataFrame(columns=TASK_COLUMNS)
    )
    job_table = pd.DataFrame(job_rows)
    for column in JOB_COLUMNS + ["n_train_tasks", "n_train_jobs"]:
        if column not in job_table:
            job_table[column] = np.nan
    return task_table[TASK_COLUMNS], job_table


def _scores(truth: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """accuracy on the test rows as they are; balanced_accuracy = (TPR + 1 - FPR) / 2, the
    expected accuracy on a class-balanced test set: the MTL paper's Table 5 oversamples
    stragglers in its validation sets too, so it is the number to read beside it."""
    if len(truth) == 0:
        return {
            name: np.nan
            for name in ("accuracy", "balanced_accuracy", "TPR", "FPR", "precision", "F1")
        }
    tp, fp, fn, tn = confusion(truth, predicted)
    computed = rates(np.array([tp]), np.array([fp]), np.array([fn]), np.array([tn]))
    out = {name: float(computed[name][0]) for name in ("TPR", "FPR", "precision", "F1")}
    out["accuracy"] = float((tp + tn) / len(truth))
    out["balanced_accuracy"] = (out["TPR"] + 1.0 - out["FPR"]) / 2.0
    return out


def learning_curve(
    tasks: pd.DataFrame,
    features: list[str],
    method_class: type[LaunchMethod],
    params: dict[str, Any],
    settings: LaunchSettings,
    seed: int,
    dataset: str,
) -> pd.DataFrame:
    """One row per training share (see the module docstring); `tasks` labelled and sorted by
    task_start (`load_launch_tasks`)."""
    from stragglers.replay.core import derive_seed

    starts = tasks["task_start"].to_numpy(float)
    rows_out = []
    for share in settings.train_shares:
        split_time = float(starts[min(int(share * len(starts)), len(starts) - 1)])
        train = training_rows(tasks, split_time)
        test = tasks[starts > split_time]
        row: dict[str, Any] = {
            "dataset": dataset,
            "method": method_class.name,
            "family": method_class.family,
            "label": settings.label,
            "train_share": float(share),
            "split_time": split_time,
            "n_train": len(train),
            "n_train_jobs": int(tasks["job_id"].iloc[train].nunique()),
            "n_train_stragglers": int(tasks["straggler"].to_numpy()[train].sum()),
            "n_test": len(test),
            "n_test_stragglers": int(test["straggler"].sum()),
        }
        try:
            fitted = fit_model(
                tasks,
                features,
                train,
                method_class,
                params,
                settings,
                derive_seed(seed, "launch-curve", method_class.name, f"{share:.4f}"),
            )
            predicted = fitted.predict(test, features)
        except Exception as error:
            row.update(status="failed", reason=f"{type(error).__name__}: {error}")
            rows_out.append(row)
            continue
        truth = test["straggler"].to_numpy(bool)
        row.update(status="ok" if fitted.model is not None else "no_model", reason=fitted.reason)
        row.update(_scores(truth, predicted))
        if fitted.model is not None:
            row.update(fitted.model.describe())
        seen_nodes = set(tasks["node"].to_numpy()[train])
        seen_workloads = set(tasks["workload"].to_numpy()[train])
        for name, column, seen in (
            ("node", "node", seen_nodes),
            ("workload", "workload", seen_workloads),
        ):
            unseen = ~test[column].isin(seen).to_numpy()
            row[f"n_unseen_{name}"] = int(unseen.sum())
            scores = _scores(truth[unseen], predicted[unseen])
            row[f"unseen_{name}_accuracy"] = scores["accuracy"]
            row[f"unseen_{name}_balanced_accuracy"] = scores["balanced_accuracy"]
            row[f"unseen_{name}_TPR"] = scores["TPR"]
            row[f"unseen_{name}_FPR"] = scores["FPR"]
        rows_out.append(row)
    return pd.DataFrame(rows_out)


def run_launch_method(
    converted_dir: str,
    *,
    kind: str,
    dataset: str,
    method_class: type[LaunchMethod],
    params: dict[str, Any],
    settings: LaunchSettings,
    seed: int,
    interval: float,
    repeats: int,
    deadline_factors: list[float],
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """One launch-time method on a converted dataset: its online predictions (tasks, jobs), its
    learning curve and the hold-back simulation of its flags."""
    from stragglers.launch.simulate import simulate_hold_back
    from stragglers.launch.tasks import load_launch_tasks

    rows, features = load_launch_tasks(converted_dir, kind, settings.workload)
    rows = add_labels(rows, settings)
    log.info(
        "%s: %d tasks of %d jobs, %d nodes, %d workloads (%s), label %s",
        dataset,
        len(rows),
        rows["job_id"].nunique(),
        rows["node"].nunique(),
        rows["workload"].nunique(),
        settings.workload,
        settings.label,
    )
    predictions, job_rows = online_predictions(
        rows, features, method_class, params, settings, seed, dataset
    )
    curve_rows = learning_curve(rows, features, method_class, params, settings, seed, dataset)
    curve_rows["workload"] = settings.workload
    held_back = simulate_hold_back(
        predictions, interval, settings.straggler_quantile, repeats, int(seed), deadline_factors
    )
    log.info(
        "%s on %s: %d jobs, %d failed, %d without a model",
        method_class.name,
        dataset,
        len(job_rows),
        int((job_rows["status"] == "failed").sum()),
        int(job_rows["reason"].astype(str).str.startswith("no model").sum()),
    )
    return predictions, job_rows, curve_rows, held_back
