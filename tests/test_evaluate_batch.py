"""The evaluation's cheaper paths against the code they replace: `sort_rows`'s keys computed
once per distinct (method, family) and dataset (the old per-row loop kept here as the
reference), and the scores computed with the prediction tables validated once and the scored
rows built once (`validated=True`, `scored=`) equal to the defaults, on varied tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stragglers.evaluate import metrics, timing
from stragglers.evaluate.metrics import PAPER_METHOD_ORDER, method_sort_key, sort_rows


def old_sort_rows(frame, dataset_order=None, extra=()):
    frame = frame.reset_index(drop=True)
    if frame.empty:
        return frame
    has_family = "family" in frame
    method_keys = [
        method_sort_key(m, f if has_family else None)
        for m, f in zip(
            frame["method"], frame["family"] if has_family else [None] * len(frame), strict=True
        )
    ]
    sort_frame = pd.DataFrame(
        {
            "_family": [k[0] for k in method_keys],
            "_method_rank": [k[1] for k in method_keys],
            "_method": [k[2] for k in method_keys],
        },
        index=frame.index,
    )
    by = ["_family", "_method_rank", "_method"]
    if "dataset" in frame:
        seen = list(dict.fromkeys(frame["dataset"]))
        order = list(dataset_order) if dataset_order is not None else seen
        rank = {d: i for i, d in enumerate(order)}
        sort_frame["_dataset"] = [rank.get(d, len(order)) for d in frame["dataset"]]
        sort_frame["_dataset_name"] = frame["dataset"].astype(str)
        by += ["_dataset", "_dataset_name"]
    for column in extra:
        sort_frame[f"_x_{column}"] = frame[column]
        by.append(f"_x_{column}")
    order_index = sort_frame.sort_values(by, kind="stable").index
    return frame.loc[order_index].reset_index(drop=True)


METHODS = [*PAPER_METHOD_ORDER, "nurd_nc", "NurdNC", "zeta", "Alpha", "LATE", "START"]
FAMILIES = ["Supervised", "Ours", "Reference", "Schedulers", "Unknown family", None, np.nan]


def random_rows(rng, n, with_family=True, with_dataset=True):
    frame = {
        "method": rng.choice(METHODS, n),
        "job_id": rng.choice(["1", "2", "10", "3"], n),  # ties: the stable sort keeps them
        "k": rng.integers(1, 4, n),
        "value": rng.random(n),
    }
    if with_family:
        frame["family"] = pd.Series(rng.choice(np.array(FAMILIES, dtype=object), n))
    if with_dataset:
        frame["dataset"] = pd.Series(rng.choice(np.array(["b", "a", "c", None], object), n))
    return pd.DataFrame(frame, index=rng.permutation(n) % max(n // 2, 1))  # repeated labels


@pytest.mark.parametrize("seed", range(12))
def test_sort_rows_equals_the_per_row_keys(seed):
    rng = np.random.default_rng(seed)
    n = [0, 1, 2, 7, 60, 500][seed % 6]
    frame = random_rows(rng, n, with_family=seed % 3 != 0, with_dataset=seed % 4 != 1)
    for dataset_order in (None, ["c", "a"], [], ["a", None]):
        for extra in ((), ["job_id", "k"], ["value"]):
            pd.testing.assert_frame_equal(
                sort_rows(frame, dataset_order=dataset_order, extra=extra),
                old_sort_rows(frame, dataset_order=dataset_order, extra=extra),
                check_exact=True,
            )


def prediction_tables(seed):
    """Two jobs of one method plus a failed one, an unscorable one (no straggler) and one
    with NaN flag times only; ties in flag times."""
    rng = np.random.default_rng(seed)
    tasks, jobs = [], []
    for n, (job_id, status) in enumerate(
        [("a", "ok"), ("b", "ok"), ("c", "failed"), ("d", "ok"), ("e", "ok")]
    ):
        n_tasks = int(rng.integers(1, 30)) if job_id != "a" else 1
        start = rng.uniform(0, 100, n_tasks)
        end = start + rng.lognormal(4, 1, n_tasks)
        latency = end - start
        threshold = float(np.quantile(latency, 0.9)) if job_id != "d" else latency.max() + 1
        flag = np.round(start + rng.uniform(0, 1, n_tasks) * latency, -1)
        flag = np.clip(flag, start, np.nextafter(end, start))
        flagged = rng.random(n_tasks) < (0.0 if job_id == "e" else 0.5)
        if status == "ok":
            tasks.append(
                pd.DataFrame(
                    {
                        "dataset": "d",
                        "method": "M",
                        "job_id": job_id,
                        "task": np.arange(n_tasks),
                        "latency": latency,
                        "task_start": start,
                        "task_end": end,
                        "is_straggler": latency >= threshold,
                        "evaluated": rng.random(n_tasks) < 0.9 if n else True,
                        "flagged": flagged,
                        "flag_time": np.where(flagged, flag, np.nan),
                    }
                )
            )
        jobs.append(
            {
                "dataset": "d",
                "method": "M",
                "family": "F",
                "privileged": False,
                "job_id": job_id,
                "status": status,
                "reason": "",
                "seconds": 0.1,
                "n_checkpoints": 3,
                "straggler_threshold": threshold,
                "job_start": float(start.min()),
                "job_end": float(end.max()),
                "prediction_start": 0.0,
            }
        )
    return pd.concat(tasks, ignore_index=True), pd.DataFrame(jobs)


@pytest.mark.parametrize("seed", range(6))
def test_scores_validated_once_and_from_shared_rows_equal_the_defaults(seed):
    tasks, jobs = prediction_tables(seed)
    metrics.validate_predictions(tasks, jobs)
    scored = timing._scored_rows(tasks, jobs)
    before = scored.copy()
    pairs = [
        (metrics.job_metrics(tasks, jobs, validated=True), metrics.job_metrics(tasks, jobs)),
        *zip(
            metrics.f1_over_time(tasks, jobs, 4, validated=True),
            metrics.f1_over_time(tasks, jobs, 4),
            strict=True,
        ),
        (
            timing.timing_job_metrics(tasks, jobs, validated=True, scored=scored),
            timing.timing_job_metrics(tasks, jobs),
        ),
        *zip(
            timing.lead_over_time(tasks, jobs, 4, validated=True, scored=scored),
            timing.lead_over_time(tasks, jobs, 4),
            strict=True,
        ),
        (
            timing.flag_leads(tasks, jobs, validated=True, scored=scored),
            timing.flag_leads(tasks, jobs),
        ),
    ]
    for new, old in pairs:
        pd.testing.assert_frame_equal(new, old, check_exact=True)
    pd.testing.assert_frame_equal(scored, before)  # shared, so never changed


def test_validated_skips_only_the_check():
    tasks, jobs = prediction_tables(0)
    broken = tasks.assign(flag_time=np.nan)  # flagged rows without a flag time
    with pytest.raises(ValueError, match="flag_time must be NaN exactly"):
        metrics.job_metrics(broken, jobs)
    with pytest.raises(ValueError, match="flag_time must be NaN exactly"):
        metrics.f1_over_time(broken, jobs)
    metrics.job_metrics(broken, jobs, validated=True)
