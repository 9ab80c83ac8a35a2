"""Bootstrap intervals over jobs and paired comparisons between methods (docs/statistics.md).

The resampling unit is the job (the tasks of one job are not independent); each call resamples
job positions with `scipy.stats.bootstrap` and a vectorised statistic, from its own stream
seeded by the config's seed and what is resampled, so a result depends on neither row order
nor call order. Edge cases give NaN intervals with a note, never an error. Paired differences
use the jobs both methods scored; their p-values are Holm-corrected per family, and a method is
tied with the reference when Holm does not reject (docs/statistics.md gives each rule).
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

CONFIDENCE_LEVEL = 0.95
N_RESAMPLES = 2000
INTERVAL_METHODS = ("percentile", "basic", "BCa")
DEFAULT_METHOD = "percentile"
# Table 3's numbers with an interval: per-job means, then the pooled median lead
MEAN_METRICS = ("F1", "TPR", "FPR", "early_F1")
LEAD_METRIC = "median_lead"
PAIRED_METRICS = ("F1", "early_F1")
PAIRED_COLUMNS = [
    "dataset",
    "metric",
    "reference_kind",
    "reference",
    "method",
    "family",
    "privileged",
    "n_jobs",
    "method_mean",
    "reference_mean",
    "diff",
    "diff_lo",
    "diff_hi",
    "p_value",
    "p_holm",
    "tied",
    "note",
]
# a statistic undefined in at most this share of resamples (a median lead when the resample
# drew no job with a flagged straggler) gets the interval of the other resamples, noted
MAX_UNDEFINED_SHARE = 0.01
# the cells a lead batch may hold at once (resamples x jobs), to bound memory
_MAX_CELLS = 4_000_000


def rng_for(seed: int, *key) -> np.random.Generator:
    """A generator for one resampling job: the config's seed and a stable hash of `key`."""
    digest = hashlib.sha256("\x1f".join(str(k) for k in key).encode()).digest()
    return np.random.default_rng([int(seed), int.from_bytes(digest[:8], "little")])


def bootstrap_settings(settings: dict | None) -> dict:
    """The config's `evaluation` bootstrap settings as keyword arguments of this module's
    interval functions (defaults where absent)."""
    settings = settings or {}
    return {
        "n_resamples": int(settings.get("bootstrap_resamples", N_RESAMPLES)),
        "confidence_level": float(settings.get("confidence_level", CONFIDENCE_LEVEL)),
        "method": str(settings.get("bootstrap_method", DEFAULT_METHOD)),
    }


def check_settings(n_resamples: int, confidence_level: float, method: str) -> None:
    if int(n_resamples) != n_resamples or n_resamples < 2:
        raise ValueError(f"bootstrap resamples must be an integer >= 2, got {n_resamples!r}")
    if not 0 < confidence_level < 1:
        raise ValueError(f"confidence level must be in (0, 1), got {confidence_level!r}")
    if method not in INTERVAL_METHODS:
        raise ValueError(f"bootstrap method must be one of {INTERVAL_METHODS}, got {method!r}")


def bootstrap_jobs(
    n_jobs: int,
    statistic: Callable[[np.ndarray], np.ndarray],
    n_outputs: int,
    *,
    rng: np.random.Generator,
    n_resamples: int = N_RESAMPLES,
    confidence_level: float = CONFIDENCE_LEVEL,
    method: str = DEFAULT_METHOD,
    batch: int | None = None,
) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray | None]:
    """Bootstrap interval of `n_outputs` statistics of `n_jobs` jobs, resampling jobs.

    `statistic(positions)` gets integer job positions of shape (..., m) (resampled along the
    last axis) and returns shape (n_outputs, ...). Returns (low, high, notes, distribution):
    low/high of shape (n_outputs,), one note per output ("" when the interval is regular), and
    the bootstrap distribution (n_outputs, n_resamples), None when there was no bootstrap.
    """
    check_settings(n_resamples, confidence_level, method)
    from scipy import stats

    low = np.full(n_outputs, np.nan)
    high = np.full(n_outputs, np.nan)
    if n_jobs < 2:
        reason = "no scored job" if n_jobs == 0 else "one scored job: no interval"
        return low, high, [reason] * n_outputs, None

    def vectorised(positions, axis=-1):
        positions = np.moveaxis(np.asarray(positions), axis, -1).astype(np.intp)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # nanmean of an empty slice
            return np.asarray(statistic(positions), dtype=float)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = stats.bootstrap(
            (np.arange(n_jobs),),
            vectorised,
            n_resamples=int(n_resamples),
            batch=batch,
            vectorized=True,
            axis=-1,
            confidence_level=confidence_level,
            method=method,
            rng=rng,
        )
    scipy_warning = "; ".join(sorted({str(w.message).split(".")[0] for w in caught}))
    distribution = np.asarray(result.bootstrap_distribution, dtype=float).reshape(n_outputs, -1)
    interval_low = np.atleast_1d(np.asarray(result.confidence_interval.low, dtype=float))
    interval_high = np.atleast_1d(np.asarray(result.confidence_interval.high, dtype=float))
    notes = []
    for j in range(n_outputs):
        values = distribution[j]
        undefined = np.isnan(values)
        if undefined.all():
            notes.append("undefined in every resample")
        elif undefined.any():
            share = undefined.mean()
            if share <= MAX_UNDEFINED_SHARE and method != "BCa":
                # the rare resamples without a value are left out (noted), as a percentile of
                # the others; BCa's jackknife has no such reading
                alpha = 1 - confidence_level
                q_low, q_high = np.percentile(values[~undefined], [50 * alpha, 100 - 50 * alpha])
                if method == "basic":
                    estimate = float(np.asarray(vectorised(np.arange(n_jobs)))[j])
                    q_low, q_high = 2 * estimate - q_high, 2 * estimate - q_low
                low[j], high[j] = q_low, q_high
                notes.append(f"undefined in {share:.1%} of resamples, left out")
            else:
                notes.append(f"undefined in {share:.1%} of resamples: no interval")
        elif values.min() == values.max():
            low[j] = high[j] = values[0]  # degenerate: every resample gives the same value
            notes.append("")
        elif np.isnan(interval_low[j]) or np.isnan(interval_high[j]):
            notes.append(
                f"scipy gave no {method} interval"
                + (f" ({scipy_warning})" if scipy_warning else "")
            )
        else:
            low[j], high[j] = interval_low[j], interval_high[j]
            notes.append("")
    return low, high, notes, distribution


# ---------------------------------------------------------------------------------------
# statistics over resampled job positions


def mean_statistic(values: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Per-job values (n_jobs, k) -> the mean over resampled jobs of each column, NaN skipped
    (FPR is undefined on a job whose scored tasks are all stragglers)."""
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]

    def statistic(positions: np.ndarray) -> np.ndarray:
        picked = values[positions]  # (..., m, k)
        return np.moveaxis(np.nanmean(picked, axis=-2), -1, 0)

    return statistic


def pooled_median_statistic(
    leads: np.ndarray, lead_job: np.ndarray, n_jobs: int
) -> Callable[[np.ndarray], np.ndarray]:
    """The median of the pooled leads of the resampled jobs (a job drawn twice brings its
    leads twice), as pandas' median of the pooled values: the mean of the two middle ones
    for an even count; NaN when the resample holds no lead. Returns shape (1, ...).

    Per resample, the k-th smallest pooled lead is found by bisection over the sorted leads:
    #pooled leads <= the i-th sorted lead = counts . below[i], with counts the number of
    times each job was drawn and below[i, j] the number of job j's leads among the first
    i + 1; log2(#leads) steps of (resamples x jobs) each."""
    leads = np.asarray(leads, dtype=float)
    lead_job = np.asarray(lead_job, dtype=np.intp)
    order = np.argsort(leads, kind="stable")
    sorted_leads = leads[order]
    n_leads = sorted_leads.size
    below = None
    if n_leads:
        below = np.zeros((n_leads, n_jobs), dtype=np.int32)
        below[np.arange(n_leads), lead_job[order]] = 1
        below = np.cumsum(below, axis=0, dtype=np.int32)

    def kth(counts: np.ndarray, k: np.ndarray) -> np.ndarray:
        low = np.zeros(len(k), dtype=np.intp)
        high = np.full(len(k), n_leads - 1, dtype=np.intp)
        while (low < high).any():
            middle = (low + high) // 2
            at_most = np.einsum("rj,rj->r", counts, below[middle])
            right = at_most <= k
            low = np.where(right, middle + 1, low)
            high = np.where(right, high, middle)
        return sorted_leads[low]

    def statistic(positions: np.ndarray) -> np.ndarray:
        shape = positions.shape[:-1]
        flat = positions.reshape(-1, positions.shape[-1])
        n_rows = flat.shape[0]
        out = np.full(n_rows, np.nan)
        if n_leads:
            step = max(1, _MAX_CELLS // max(n_jobs, 1))
            for begin in range(0, n_rows, step):
                rows = flat[begin : begin + step]
                offsets = np.arange(rows.shape[0])[:, None] * n_jobs
                counts = np.bincount(
                    (rows + offsets).ravel(), minlength=rows.shape[0] * n_jobs
                ).reshape(-1, n_jobs)
                total = counts @ below[-1].astype(np.int64)
                has = total > 0
                median = np.full(rows.shape[0], np.nan)
                if has.any():
                    c, t = counts[has], total[has]
                    median[has] = (kth(c, (t - 1) // 2) + kth(c, t // 2)) / 2
                out[begin : begin + step] = median
        return out.reshape((1, *shape))

    return statistic


def combine(*statistics: Callable[[np.ndarray], np.ndarray]) -> Callable:
    def statistic(positions: np.ndarray) -> np.ndarray:
        return np.concatenate([s(positions) for s in statistics], axis=0)

    return statistic


def _notes(parts: dict[str, str]) -> str:
    return "; ".join(f"{name}: {note}" for name, note in parts.items() if note)


# ---------------------------------------------------------------------------------------
# Table 3


def table3_intervals(
    job_metrics: pd.DataFrame,
    leads: pd.DataFrame | None = None,
    *,
    seed: int,
    n_resamples: int = N_RESAMPLES,
    confidence_level: float = CONFIDENCE_LEVEL,
    method: str = DEFAULT_METHOD,
) -> pd.DataFrame:
    """Per (dataset, method): `<metric>_lo` / `<metric>_hi` of Table 3's F1, TPR, FPR, early-F1
    (means over scored jobs) and median lead (over the pooled flagged stragglers of the scored
    jobs), resampling the scored jobs (status "ok"); and `interval_note` naming any metric
    without an interval and why. Metrics absent from `job_metrics` (the timing columns, or
    the median lead without `leads`) are left out."""
    check_settings(n_resamples, confidence_level, method)
    metrics = [m for m in MEAN_METRICS if m in job_metrics]
    with_lead = leads is not None and LEAD_METRIC in job_metrics
    names = metrics + ([LEAD_METRIC] if with_lead else [])
    scored = job_metrics[job_metrics["status"] == "ok"]
    rows = []
    pairs = job_metrics[["dataset", "method"]].drop_duplicates().itertuples(index=False)
    for dataset, method_name in pairs:
        jobs = scored[(scored["dataset"] == dataset) & (scored["method"] == method_name)]
        jobs = jobs.assign(job_id=jobs["job_id"].astype(str)).sort_values("job_id")
        job_ids = jobs["job_id"].to_numpy()
        statistics = [mean_statistic(jobs[metrics].to_numpy(float))] if metrics else []
        if with_lead:
            mine = leads[(leads["dataset"] == dataset) & (leads["method"] == method_name)]
            position = pd.Series(np.arange(len(job_ids)), index=job_ids)
            mine = mine[mine["job_id"].astype(str).isin(position.index)]
            statistics.append(
                pooled_median_statistic(
                    mine["lead"].to_numpy(float),
                    position.loc[mine["job_id"].astype(str)].to_numpy(),
                    len(job_ids),
                )
            )
        low, high, notes, _ = bootstrap_jobs(
            len(job_ids),
            combine(*statistics),
            len(names),
            rng=rng_for(seed, "table3", dataset, method_name),
            n_resamples=n_resamples,
            confidence_level=confidence_level,
            method=method,
        )
        row = {"dataset": dataset, "method": method_name}
        for name, lo, hi in zip(names, low, high, strict=True):
            row[f"{name}_lo"], row[f"{name}_hi"] = lo, hi
        if len(set(notes)) == 1 and notes[0]:
            row["interval_note"] = notes[0]
        else:
            row["interval_note"] = _notes(dict(zip(names, notes, strict=True)))
        rows.append(row)
    columns = ["dataset", "method"] + [f"{n}_{s}" for n in names for s in ("lo", "hi")]
    return pd.DataFrame(rows, columns=[*columns, "interval_note"])


# ---------------------------------------------------------------------------------------
# means of per-job values (the JCT reduction of each policy)


def grouped_mean_intervals(
    per_job: pd.DataFrame,
    *,
    group: Sequence[str],
    rows: Sequence[str],
    value: str,
    seed: int,
    key: Sequence = (),
    n_resamples: int = N_RESAMPLES,
    confidence_level: float = CONFIDENCE_LEVEL,
    method: str = DEFAULT_METHOD,
) -> pd.DataFrame:
    """Interval of the mean of `value` over jobs for every (group, rows) combination of
    `per_job` (one row per job and combination). One bootstrap per `group` (e.g. a method),
    so all its rows (e.g. policy x machines) share the resampled jobs; a job missing from a
    row is skipped in that row's mean. Returns group + rows + `<value>_lo`, `<value>_hi`,
    `<value>_interval_note`."""
    check_settings(n_resamples, confidence_level, method)
    group, rows = list(group), list(rows)
    out = []
    for group_key, part in per_job.groupby(group, sort=False, observed=True):
        group_key = group_key if isinstance(group_key, tuple) else (group_key,)
        part = part.assign(job_id=part["job_id"].astype(str))
        matrix = part.pivot_table(
            index="job_id", columns=rows, values=value, aggfunc="mean", dropna=False, observed=True
        ).sort_index()
        combos = list(matrix.columns)
        low, high, notes, _ = bootstrap_jobs(
            len(matrix),
            mean_statistic(matrix.to_numpy(float)),
            len(combos),
            rng=rng_for(seed, *key, *group_key),
            n_resamples=n_resamples,
            confidence_level=confidence_level,
            method=method,
        )
        for combo, lo, hi, note in zip(combos, low, high, notes, strict=True):
            combo = combo if isinstance(combo, tuple) else (combo,)
            out.append(
                {
                    **dict(zip(group, group_key, strict=True)),
                    **dict(zip(rows, combo, strict=True)),
                    f"{value}_lo": lo,
                    f"{value}_hi": hi,
                    f"{value}_interval_note": note,
                }
            )
    return pd.DataFrame(
        out, columns=[*group, *rows, f"{value}_lo", f"{value}_hi", f"{value}_interval_note"]
    )


# ---------------------------------------------------------------------------------------
# paired comparisons


def bootstrap_p_value(distribution: np.ndarray) -> float:
    """Two-sided p-value of "difference = 0" from a bootstrap distribution of the difference:
    min(1, 2 min(1 + #{d* <= 0}, 1 + #{d* >= 0}) / (B + 1)), with |d*| <= 1e-12 counted as 0
    (rounding); NaN if any resample is NaN."""
    values = np.asarray(distribution, dtype=float)
    if values.size == 0 or np.isnan(values).any():
        return float("nan")
    # a mean difference that is 0 up to rounding (e.g. 0.1 and -0.1 as computed) counts as 0
    tolerance = 1e-12 * max(1.0, float(np.abs(values).max()))
    below = 1 + np.count_nonzero(values <= tolerance)
    above = 1 + np.count_nonzero(values >= -tolerance)
    return float(min(1.0, 2 * min(below, above) / (values.size + 1)))


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (NaN stays NaN and is not counted in the family)."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    defined = np.flatnonzero(~np.isnan(p))
    m = defined.size
    if m == 0:
        return adjusted
    order = defined[np.argsort(p[defined], kind="stable")]
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[index]))
        adjusted[index] = running
    return adjusted


def paired_difference(
    method_values: pd.Series,
    reference_values: pd.Series,
    *,
    rng: np.random.Generator,
    n_resamples: int = N_RESAMPLES,
    confidence_level: float = CONFIDENCE_LEVEL,
    method: str = DEFAULT_METHOD,
) -> dict:
    """Paired bootstrap of mean(method - reference) over the jobs both scored.

    Both series are indexed by job_id (NaN = not scored). Returns n_jobs, the two means over
    the common jobs, diff, diff_lo, diff_hi, p_value and a note."""
    joined = pd.concat({"m": method_values, "r": reference_values}, axis=1).dropna()
    joined.index = joined.index.astype(str)
    joined = joined.sort_index()
    differences = (joined["m"] - joined["r"]).to_numpy(float)
    low, high, notes, distribution = bootstrap_jobs(
        len(joined),
        mean_statistic(differences),
        1,
        rng=rng,
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        method=method,
    )
    note = notes[0].replace("scored job", "job scored by both") if notes[0] else ""
    return {
        "n_jobs": len(joined),
        "method_mean": float(joined["m"].mean()) if len(joined) else np.nan,
        "reference_mean": float(joined["r"].mean()) if len(joined) else np.nan,
        "diff": float(differences.mean()) if len(joined) else np.nan,
        "diff_lo": low[0],
        "diff_hi": high[0],
        "p_value": bootstrap_p_value(distribution[0]) if distribution is not None else np.nan,
        "note": note,
    }


def best_method(summary: pd.DataFrame, metric: str) -> str | None:
    """The non-privileged method with the highest mean `metric` in one dataset's summary rows
    (ties: the first in Table 3's order); None if no method has a value."""
    from stragglers.evaluate.metrics import method_sort_key

    fair = summary[~summary["privileged"].astype(bool) & summary[metric].notna()]
    if fair.empty:
        return None
    keys = [
        (-value, method_sort_key(m, f))
        for m, f, value in zip(fair["method"], fair["family"], fair[metric], strict=True)
    ]
    return str(fair["method"].iloc[min(range(len(keys)), key=keys.__getitem__)])


def comparison_summary(
    job_metrics: pd.DataFrame, dataset_order: Sequence[str] | None = None
) -> pd.DataFrame:
    """Table 3's summary rows (stragglers.evaluate.metrics.summary_table) with the mean
    early-F1 over scored jobs when the metrics have it: what `paired_comparisons` ranks by."""
    from stragglers.evaluate.metrics import summary_table

    summary = summary_table(job_metrics, dataset_order=dataset_order)
    if "early_F1" in job_metrics:
        early = (
            job_metrics[job_metrics["status"] == "ok"]
            .groupby(["dataset", "method"], sort=False, observed=True)["early_F1"]
            .mean()
            .rename("early_F1")
            .reset_index()
        )
        summary = summary.merge(early, on=["dataset", "method"], how="left")
    return summary


def paired_comparisons(
    job_metrics: pd.DataFrame,
    summary: pd.DataFrame,
    *,
    seed: int,
    metrics: Sequence[str] = PAIRED_METRICS,
    nurd: str = "NURD",
    n_resamples: int = N_RESAMPLES,
    confidence_level: float = CONFIDENCE_LEVEL,
    method: str = DEFAULT_METHOD,
) -> pd.DataFrame:
    """Per dataset and metric: every method against the best non-privileged method by that
    metric's mean (`summary`, Table 3's rows) and against `nurd`, paired over the jobs both
    scored, with Holm-adjusted p-values and the tie flag (columns PAIRED_COLUMNS).

    A dataset's comparisons all draw from one stream (``("paired", dataset)``), so pairs with
    the same common jobs use the same resampled jobs. The reference itself is not compared.
    Privileged methods get their difference and p-value but are outside the Holm family
    (p_holm and tied empty)."""
    check_settings(n_resamples, confidence_level, method)
    alpha = 1 - confidence_level
    scored = job_metrics[job_metrics["status"] == "ok"]
    frames = []
    for dataset, rows in summary.groupby("dataset", sort=False, observed=True):
        jobs = scored[scored["dataset"] == dataset]
        for metric in metrics:
            if metric not in jobs or metric not in rows:
                continue
            values = {
                m: part.set_index(part["job_id"].astype(str))[metric]
                for m, part in jobs.groupby("method", sort=False, observed=True)
            }
            references = [("best", best_method(rows, metric))]
            if nurd in set(rows["method"]):
                references.append(("NURD", nurd))
            for kind, reference in references:
                if reference is None:
                    continue
                out = []
                for row in rows.itertuples(index=False):
                    if row.method == reference:
                        continue
                    empty = pd.Series(dtype=float)
                    result = paired_difference(
                        values.get(row.method, empty),
                        values.get(reference, empty),
                        rng=rng_for(seed, "paired", dataset),
                        n_resamples=n_resamples,
                        confidence_level=confidence_level,
                        method=method,
                    )
                    out.append(
                        {
                            "dataset": dataset,
                            "metric": metric,
                            "reference_kind": kind,
                            "reference": reference,
                            "method": row.method,
                            "family": row.family,
                            "privileged": bool(row.privileged),
                            **result,
                        }
                    )
                if not out:
                    continue
                frame = pd.DataFrame(out)
                family = ~frame["privileged"].to_numpy(bool)
                adjusted = np.full(len(frame), np.nan)
                adjusted[family] = holm(frame.loc[family, "p_value"].to_numpy(float))
                frame["p_holm"] = adjusted
                frame["tied"] = pd.array(
                    [pd.NA if np.isnan(p) else bool(p >= alpha) for p in adjusted], dtype="boolean"
                )
                outside = frame["privileged"] & (frame["note"] == "")
                frame.loc[outside, "note"] = "privileged: outside the Holm family"
                frames.append(frame[PAIRED_COLUMNS])
    if not frames:
        return pd.DataFrame(columns=PAIRED_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def tie_marks(comparisons: pd.DataFrame) -> dict[tuple[str, str, str], bool]:
    """{(dataset, metric, method): tied with the best} from `paired_comparisons` rows."""
    best = comparisons[
        (comparisons["reference_kind"] == "best") & comparisons["tied"].fillna(False).astype(bool)
    ]
    return {
        (d, m, x): True
        for d, m, x in zip(best["dataset"], best["metric"], best["method"], strict=True)
    }
