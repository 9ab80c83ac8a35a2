"""How a task's usage evolves over its life, measured per task on converted datasets, to set the
real Google jobs (dataset `google-2011-usage`) beside the generator's Google output
(docs/generator.md, "Against the real jobs' usage").

Every statistic is read from a converted dataset (stragglers/formats/jobs.py) on the aligned
timeline of the paper's protocol (stragglers/replay/aligned.py: a task's windows in time order,
its life the sum of its window durations, its features the duration-weighted mean so far):
- windows: their lengths (quantiles over all windows), windows per task, the share of a task's
  life its first window covers;
- start-up: each usage measure in the task's first window, in the window covering 25 / 50 /
  75 % of its life and in its last window, over the task's mean (median over tasks with a
  nonzero mean); the share of tasks whose first (last) window reads 0 in every measure, the
  share of a task's life in such idle windows and how that idle time follows latency;
- partial sums: at 25 / 50 / 75 % of a task's life, |running mean - final mean| / final mean
  over the windows ended by then (median over tasks), the share of tasks whose running mean
  is still 0, and the share of tasks with no window ended yet;
- variation: per measure, the duration-weighted coefficient of variation over a task's
  non-idle windows (median over tasks);
- relation to latency: per measure, the Spearman correlation of the task's mean with its
  latency within a job (median over jobs), the correlation of within-job ranks pooled over
  all tasks, and the Spearman correlation of the mean over non-idle windows (idle time left
  out);
- latency tails within a job: p90 / p50, p99 / p50, max / p50 and the share of tasks above
  twice the median (median, min and max over jobs; traces.calibrate.job_latency_shape).

It lives in the replay stage because it reads jobs through the replay's aligned view.

The first dataset is the reference; each other one gets a distance per statistic: |log ratio|
for lengths, counts, tail ratios and CVs, |difference| for shares, ratios near 1 and
correlations.

    python -m stragglers.replay.usage_realism <real converted dir> <converted dir> ... \\
        [--names real,default,hand-set] --out results/usage-realism
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from stragglers.convert.nurd_timeseries import MEASURES
from stragglers.formats.datasets import converted_kind, feature_columns
from stragglers.formats.jobs import Job, iter_shard_jobs
from stragglers.replay.aligned import build_view
from stragglers.traces.calibrate import job_latency_shape, markdown_table

FRACTIONS = (0.25, 0.5, 0.75)
WINDOW_QUANTILES = (0.1, 0.5, 0.9)
LOG, ABS = "abs log ratio", "abs difference"  # no "|": the names go into Markdown tables
KIND, FURTHEST = "distance kind", "furthest measure"
STARTUP = "first window / task mean"
WIND_DOWN = "last window / task mean"
IDLE_FIRST = "share of tasks whose first window reads 0 in every measure"
IDLE_LAST = "share of tasks whose last window reads 0 in every measure"
IDLE_SHARE = "share of a task's life in windows reading 0 in every measure (median)"
IDLE_SPEARMAN = "Spearman of that idle time with latency (median over jobs)"


def at_life(fraction: float) -> str:
    return f"window at {round(fraction * 100)}% of life / task mean"


def partial_gap(fraction: float) -> str:
    return f"running mean's relative gap to the final mean at {round(fraction * 100)}% of life"


def still_zero(fraction: float) -> str:
    return f"share of tasks whose running mean is 0 at {round(fraction * 100)}% of life"


def no_window_yet(fraction: float) -> str:
    return f"share of tasks with no window ended by {round(fraction * 100)}% of life"


SPEARMAN_JOB = "Spearman with latency (median over jobs)"
SPEARMAN_POOLED = "Spearman with latency (within-job ranks pooled)"
ACTIVE_CV = "duration-weighted CV over the task's non-idle windows (median over tasks)"
ACTIVE_SPEARMAN = "Spearman of the mean over non-idle windows with latency (median over jobs)"
# per (task, measure): a column `<statistic>|<measure>` of task_statistics
PER_TASK = (
    STARTUP,
    WIND_DOWN,
    *(at_life(f) for f in FRACTIONS),
    *(partial_gap(f) for f in FRACTIONS),
    *(still_zero(f) for f in FRACTIONS),
    ACTIVE_CV,
)


def _first_row_per_task(mask: np.ndarray, task: np.ndarray, n_tasks: int, last: bool) -> np.ndarray:
    """Per task, the first (or last) row where `mask` holds; -1 where it never does."""
    rows = np.flatnonzero(mask)
    if last:
        out = np.full(n_tasks, -1, dtype=np.int64)
        np.maximum.at(out, task[rows], rows)
        return out
    out = np.full(n_tasks, len(mask), dtype=np.int64)
    np.minimum.at(out, task[rows], rows)
    return np.where(out == len(mask), -1, out)


def _active_windows(
    task: np.ndarray, values: np.ndarray, duration: np.ndarray, n_tasks: int
) -> dict[str, np.ndarray]:
    """Per task and measure, over its non-idle windows: the duration-weighted mean and
    coefficient of variation (weighted std / weighted mean); NaN without such windows (the CV
    also with one, or a mean of 0)."""
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)

    def per_task(weights: np.ndarray) -> np.ndarray:
        sums = pd.DataFrame(weights).groupby(task).sum()
        return sums.reindex(pd.RangeIndex(n_tasks)).to_numpy()

    weight = per_task(present * duration[:, None])
    count = per_task(present.astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = per_task(filled * duration[:, None]) / weight
        square = per_task(filled**2 * duration[:, None]) / weight
        spread = np.sqrt(np.maximum(square - mean**2, 0.0))
        cv = np.where((count >= 2) & (mean > 0), spread / mean, np.nan)
    return {"mean": mean, "cv": cv}


def task_statistics(job: Job, features: Sequence[str]) -> pd.DataFrame:
    """One row per task of `job`: its latency, life (sum of window durations), windows, first
    and last window lengths, idle (all-zero) windows and time, and per feature its mean
    (`<f>`), its mean over non-idle windows (`active|<f>`) and the PER_TASK statistics
    (`<statistic>|<f>`)."""
    columns = [job.feature_names.index(f) for f in features]
    view = build_view(job, np.zeros(len(job.feature_names), bool), "mean_so_far", np.inf)
    order = np.lexsort((job.window_start, job.window_task))
    task = job.window_task[order]
    values = job.window_features[order][:, columns]
    duration = (job.window_end - job.window_start)[order]
    cumulative = view.cumulative[:, columns]
    final = view.final()[:, columns]
    n = job.n_tasks
    first, last = view.offset, view.offset + view.n_windows - 1
    # a window with no usage: every measure it has reads 0 (a missing one does not count)
    idle = np.all((values == 0) | np.isnan(values), axis=1) & ~np.all(np.isnan(values), axis=1)
    idle_s = np.bincount(task, weights=idle * duration, minlength=n)
    active = _active_windows(task[~idle], values[~idle], duration[~idle], n)
    with np.errstate(invalid="ignore", divide="ignore"):
        nonzero_final = np.where(final != 0, final, np.nan)
        out = {
            "job_id": job.job_id,
            "latency": job.latency,
            "life_s": view.latency,
            "n_windows": view.n_windows,
            "first_s": view.elapsed[first],
            "last_s": view.elapsed[last] - np.where(view.n_windows > 1, view.elapsed[last - 1], 0),
            "first_share": view.elapsed[first] / view.latency,
            "first_idle": idle[first].astype(float),
            "last_idle": idle[last].astype(float),
            "idle_s": idle_s,
            "idle_share": idle_s / view.latency,
        }
        ratios = {STARTUP: values[first] / nonzero_final, WIND_DOWN: values[last] / nonzero_final}
        gaps = {}
        for fraction in FRACTIONS:
            target = fraction * view.latency[task] * (1 + 1e-9)
            covering = _first_row_per_task(view.elapsed >= target, task, n, last=False)
            ratios[at_life(fraction)] = values[covering] / nonzero_final
            ended = _first_row_per_task(view.elapsed <= target, task, n, last=True)
            partial = np.where((ended >= 0)[:, None], cumulative[np.maximum(ended, 0)], np.nan)
            gaps[partial_gap(fraction)] = np.abs(partial - final) / np.abs(nonzero_final)
            gaps[still_zero(fraction)] = np.where(np.isnan(partial), np.nan, partial == 0)
            out[no_window_yet(fraction)] = (ended < 0).astype(float)
    for j, feature in enumerate(features):
        out[feature] = final[:, j]
        out[f"active|{feature}"] = active["mean"][:, j]
        out[f"{ACTIVE_CV}|{feature}"] = active["cv"][:, j]
        for name, table in {**ratios, **gaps}.items():
            out[f"{name}|{feature}"] = table[:, j]
    return pd.DataFrame(out)


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return np.nan
    return float(pd.Series(x).rank().corr(pd.Series(y).rank()))


def _median_over_jobs(tasks: pd.DataFrame, column: str) -> float:
    """The median over jobs of the Spearman correlation of `column` with latency (NaN: no job
    where both vary)."""
    per_job = [
        _spearman(job[column].to_numpy(float), job["latency"].to_numpy(float))
        for _, job in tasks.groupby("job_id")
    ]
    per_job = pd.Series(per_job).dropna()
    return float(per_job.median()) if len(per_job) else np.nan


def latency_tails(tasks: pd.DataFrame) -> pd.DataFrame:
    """Per job: p90 / p50, p99 / p50, max / p50 and the share of its tasks above twice its
    median latency."""
    shape = job_latency_shape(tasks.assign(interrupted=False), min_tasks=1).set_index("job_id")
    grouped = tasks.groupby("job_id")["latency"]
    median = shape["median_s"]
    return pd.DataFrame(
        {
            "p90/p50": shape["p90_over_median"],
            "p99/p50": grouped.quantile(0.99) / median,
            "max/p50": shape["max_s"] / median,
            "share above 2x median": grouped.apply(lambda s: float((s > 2 * s.median()).mean())),
        }
    )


def summarise(
    tasks: pd.DataFrame, window_lengths: np.ndarray, features: Sequence[str]
) -> pd.DataFrame:
    """The dataset's statistics, one row each: statistic, feature ('' for none), value and the
    kind of distance that compares it."""
    rows: list[tuple[str, str, float, str]] = []

    def add(statistic: str, value: float, kind: str | None, feature: str = "") -> None:
        rows.append((statistic, feature, float(value), kind or ""))

    jobs = tasks["job_id"].nunique()
    add("jobs", jobs, None)
    add("tasks", len(tasks), None)
    for q, value in zip(WINDOW_QUANTILES, np.quantile(window_lengths, WINDOW_QUANTILES)):
        add(f"window length q{round(q * 100):02d} (s)", value, LOG)
    add("windows per task (median)", tasks["n_windows"].median(), LOG)
    add("windows per task (q90)", tasks["n_windows"].quantile(0.9), LOG)
    add("share of tasks with one window", (tasks["n_windows"] == 1).mean(), ABS)
    add("task life, sum of its windows (median, s)", tasks["life_s"].median(), LOG)
    add("first window length (median, s)", tasks["first_s"].median(), LOG)
    add("last window length (median, s)", tasks["last_s"].median(), LOG)
    add("first window's share of the task's life (median)", tasks["first_share"].median(), ABS)
    add(IDLE_FIRST, tasks["first_idle"].mean(), ABS)
    add(IDLE_LAST, tasks["last_idle"].mean(), ABS)
    add(IDLE_SHARE, tasks["idle_share"].median(), ABS)
    add(IDLE_SPEARMAN, _median_over_jobs(tasks, "idle_s"), ABS)
    for fraction in FRACTIONS:
        add(no_window_yet(fraction), tasks[no_window_yet(fraction)].mean(), ABS)
    for feature in features:
        for name in PER_TASK:
            column = tasks[f"{name}|{feature}"].dropna()  # NaN: no window ended, or mean 0
            value = column.mean() if name.startswith("share") else column.median()
            add(name, value if len(column) else np.nan, LOG if name == ACTIVE_CV else ABS, feature)
        add(SPEARMAN_JOB, _median_over_jobs(tasks, feature), ABS, feature)
        add(ACTIVE_SPEARMAN, _median_over_jobs(tasks, f"active|{feature}"), ABS, feature)
        ranks = tasks.groupby("job_id")[[feature, "latency"]].rank(pct=True)
        add(SPEARMAN_POOLED, ranks[feature].corr(ranks["latency"]), ABS, feature)
    tails = latency_tails(tasks)
    for column in tails:
        kind = ABS if column.startswith("share") else LOG
        for how in ("median", "min", "max"):
            add(f"latency {column} within a job ({how} over jobs)", tails[column].agg(how), kind)
    return pd.DataFrame(rows, columns=["statistic", "feature", "value", KIND])


def dataset_statistics(
    converted_dir: str | Path, features: Sequence[str] = MEASURES
) -> tuple[pd.DataFrame, np.ndarray, list[str]]:
    """Every task's statistics and every window's length of a converted dataset, and the
    features of `features` it has."""
    kind = converted_kind(converted_dir)
    present = set(feature_columns(kind, converted_dir))
    used = [f for f in features if f in present]
    tables, lengths = [], []
    for job in iter_shard_jobs(converted_dir, kind, shard=None):
        tables.append(task_statistics(job, used))
        lengths.append(job.window_end - job.window_start)
    if not tables:
        raise ValueError(f"{converted_dir}: no job in the manifest")
    return pd.concat(tables, ignore_index=True), np.concatenate(lengths), used


def distance(generated: pd.Series, reference: pd.Series, kind: pd.Series) -> pd.Series:
    with np.errstate(invalid="ignore", divide="ignore"):
        log_ratio = np.abs(np.log(generated / reference))
    log_ratio = log_ratio.where((generated > 0) & (reference > 0))
    out = pd.Series(np.nan, index=generated.index)
    out[kind == LOG] = log_ratio[kind == LOG]
    out[kind == ABS] = (generated - reference).abs()[kind == ABS]
    return out


def comparison(summaries: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per (statistic, feature): each dataset's value and, for every dataset after the
    first (the reference), its distance to it."""
    names = list(summaries)
    key = ["statistic", "feature"]
    table = summaries[names[0]].rename(columns={"value": names[0]})
    for name in names[1:]:
        table = table.merge(
            summaries[name][[*key, "value"]].rename(columns={"value": name}), on=key, how="left"
        )
    for name in names[1:]:
        table[f"distance {name}"] = distance(table[name], table[names[0]], table[KIND])
    return table


def compact(table: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """`comparison` with each per-feature statistic folded into one row: the median over the
    features of each value and of each distance, and the feature furthest from the reference
    (largest distance, over all generated datasets)."""
    distances = [f"distance {n}" for n in names[1:]]
    scalar = table[table["feature"] == ""].set_index("statistic")
    rows = [scalar[[*names, *distances, KIND]].assign(**{FURTHEST: ""})]
    per_feature = table[table["feature"] != ""]
    for statistic, group in per_feature.groupby("statistic", sort=False):
        gap = group[distances].max(axis=1)
        furthest = group["feature"].loc[gap.idxmax()] if gap.notna().any() else ""
        row = group[[*names, *distances]].median().to_frame().T
        row.index = [f"{statistic}, median over measures"]
        rows.append(row.assign(**{KIND: group[KIND].iloc[0], FURTHEST: furthest}))
    return pd.concat(rows)


def markdown(table: pd.DataFrame, digits: int = 3) -> str:
    """`markdown_table` of the numbers, the text columns (distance kind, feature) appended."""
    text = [c for c in table.columns if table[c].dtype == object]
    numbers = markdown_table(table.drop(columns=text), digits).split("\n")
    numbers[0] += " " + " | ".join(text) + " |"
    numbers[1] += "---|" * len(text)
    for i, (_, row) in enumerate(table[text].iterrows()):
        numbers[i + 2] += " " + " | ".join(str(v) for v in row) + " |"
    return "\n".join(numbers)


def usage_realism(
    converted_dirs: Iterable[str | Path], names: Sequence[str] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The full comparison (statistic x feature) and its compact form, the first dataset being
    the reference."""
    converted_dirs = list(converted_dirs)
    names = list(names) if names else [Path(d).name for d in converted_dirs]
    if len(names) != len(converted_dirs) or len(set(names)) != len(names):
        raise ValueError(f"need one distinct name per converted dir, got {names}")
    summaries = {}
    for name, folder in zip(names, converted_dirs):
        summaries[name] = summarise(*dataset_statistics(folder))
    table = comparison(summaries)
    return table, compact(table, names)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("converted", nargs="+", help="converted dirs; the first is the reference")
    parser.add_argument("--names", help="comma-separated labels (default: the folder names)")
    parser.add_argument("--out", required=True, help="folder for the CSV and Markdown tables")
    args = parser.parse_args(argv)
    names = args.names.split(",") if args.names else None
    table, short = usage_realism(args.converted, names)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "usage_realism.csv", index=False)
    (out / "usage_realism.md").write_text(markdown(table.set_index("statistic")) + "\n")
    (out / "usage_realism_compact.md").write_text(markdown(short) + "\n")
    print(markdown(short))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
