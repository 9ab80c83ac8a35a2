"""Tests of stragglers.evaluate on hand-made prediction tables with hand-computed answers."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stragglers.evaluate import metrics as ev


def make_job(
    job_id: str,
    latency,
    flag_time,
    *,
    method: str = "NURD",
    family: str = "Ours",
    privileged: bool = False,
    dataset: str = "google",
    threshold: float | None = None,
    evaluated=None,
    task_start=None,
    job_start: float = 0.0,
    job_end: float | None = None,
    seconds: float = 2.0,
    n_checkpoints: int = 4,
) -> tuple[pd.DataFrame, dict]:
    """One job's task rows and its jobs row; flag_time NaN means not flagged."""
    latency = np.asarray(latency, dtype=float)
    flag_time = np.asarray(flag_time, dtype=float)
    n = len(latency)
    task_start = np.zeros(n) if task_start is None else np.asarray(task_start, float)
    threshold = float(np.quantile(latency, 0.8)) if threshold is None else threshold
    task_end = task_start + latency
    tasks = pd.DataFrame(
        {
            "dataset": dataset,
            "method": method,
            "job_id": job_id,
            "task": np.arange(n),
            "latency": latency,
            "task_start": task_start,
            "task_end": task_end,
            "is_straggler": latency >= threshold,
            "evaluated": np.ones(n, bool) if evaluated is None else np.asarray(evaluated, bool),
            "flagged": ~np.isnan(flag_time),
            "flag_time": flag_time,
        }
    )
    job = {
        "dataset": dataset,
        "method": method,
        "family": family,
        "privileged": privileged,
        "job_id": job_id,
        "status": "ok",
        "reason": "",
        "seconds": seconds,
        "n_checkpoints": n_checkpoints,
        "straggler_threshold": threshold,
        "job_start": job_start,
        "job_end": float(task_end.max()) if job_end is None else job_end,
        "prediction_start": job_start,
    }
    return tasks, job


def failed_job(job_id: str, **overrides) -> dict:
    row = {
        "dataset": "google",
        "method": "NURD",
        "family": "Ours",
        "privileged": False,
        "job_id": job_id,
        "status": "failed",
        "reason": "too few tasks",
        "seconds": 1.0,
        "n_checkpoints": 0,
        "straggler_threshold": 5.0,
        "job_start": 0.0,
        "job_end": 10.0,
        "prediction_start": np.nan,
    }
    row.update(overrides)
    return row


def combine(*parts) -> tuple[pd.DataFrame, pd.DataFrame]:
    tasks = [p[0] for p in parts if isinstance(p, tuple)]
    jobs = [p[1] if isinstance(p, tuple) else p for p in parts]
    return pd.concat(tasks, ignore_index=True), pd.DataFrame(jobs)


NAN = np.nan
# 10 tasks; latencies 1..10 with threshold 8 -> stragglers are tasks 7, 8, 9 (latency 8-10).
# Flagged: tasks 0 (fp), 5 (fp), 8 (tp), 9 (tp); task 7 missed (fn); 6 tn's.
TEN_LATENCY = np.arange(1, 11, dtype=float)
TEN_FLAGS = [0.5, NAN, NAN, NAN, NAN, 3.0, NAN, NAN, 4.0, 6.0]


def test_confusion_and_rates_by_hand():
    truth = TEN_LATENCY >= 8
    flagged = ~np.isnan(TEN_FLAGS)
    assert ev.confusion(truth, flagged) == (2, 2, 1, 5)
    r = ev.rates(2, 2, 1, 5)
    assert r["TPR"] == pytest.approx(2 / 3)
    assert r["FNR"] == pytest.approx(1 / 3)
    assert r["FPR"] == pytest.approx(2 / 7)
    assert r["precision"] == pytest.approx(0.5)
    # F1 = 2 * 0.5 * (2/3) / (0.5 + 2/3) = 4/7
    assert r["F1"] == pytest.approx(4 / 7)


def test_rates_edge_cases():
    nothing_flagged = ev.rates(0, 0, 3, 7)
    assert nothing_flagged["precision"] == 0.0
    assert nothing_flagged["F1"] == 0.0
    assert nothing_flagged["TPR"] == 0.0 and nothing_flagged["FPR"] == 0.0
    no_stragglers = ev.rates(0, 2, 0, 8)
    assert np.isnan(no_stragglers["TPR"]) and np.isnan(no_stragglers["F1"])
    assert no_stragglers["FPR"] == pytest.approx(0.2)
    all_stragglers = ev.rates(3, 0, 1, 0)
    assert np.isnan(all_stragglers["FPR"]) and all_stragglers["F1"] == pytest.approx(6 / 7)
    vector = ev.rates(np.array([2, 0]), np.array([2, 0]), np.array([1, 3]), np.array([5, 7]))
    np.testing.assert_allclose(vector["F1"], [4 / 7, 0.0])


def test_confusion_rejects_bad_input():
    with pytest.raises(ValueError, match="shape"):
        ev.confusion([True, False], [True])
    with pytest.raises(ValueError, match="boolean"):
        ev.confusion([0.5, 1.0], [True, False])
    with pytest.raises(ValueError, match="non-negative"):
        ev.rates(-1, 0, 0, 0)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=40))
def test_f1_is_harmonic_mean_of_precision_and_tpr(pairs):
    truth, flagged = (np.array(x, dtype=bool) for x in zip(*pairs, strict=True))
    tp, fp, fn, tn = ev.confusion(truth, flagged)
    assert tp + fp + fn + tn == len(pairs)
    r = ev.rates(tp, fp, fn, tn)
    if tp + fn == 0:
        assert np.isnan(r["F1"])
    elif r["precision"] + r["TPR"] == 0:
        assert r["F1"] == 0.0
    else:
        harmonic = 2 * r["precision"] * r["TPR"] / (r["precision"] + r["TPR"])
        assert r["F1"] == pytest.approx(harmonic)


def test_job_metrics_hand_computed_job():
    tasks, jobs = combine(make_job("j1", TEN_LATENCY, TEN_FLAGS, threshold=8.0))
    metrics = ev.job_metrics(tasks, jobs)
    row = metrics.iloc[0]
    assert (row["tp"], row["fp"], row["fn"], row["tn"]) == (2, 2, 1, 5)
    assert row["status"] == "ok"
    assert row["n_tasks"] == 10 and row["n_evaluated"] == 10
    assert row["n_stragglers"] == 3 and row["n_flagged"] == 4
    assert row["F1"] == pytest.approx(4 / 7)
    assert row["FPR"] == pytest.approx(2 / 7)


def test_unevaluated_tasks_are_excluded():
    # tasks 0 and 5 (the false positives) were a privileged method's labelled training tasks
    evaluated = np.ones(10, bool)
    evaluated[[0, 5]] = False
    tasks, jobs = combine(
        make_job(
            "j1",
            TEN_LATENCY,
            TEN_FLAGS,
            threshold=8.0,
            evaluated=evaluated,
            method="Wrangler",
            family="Systems",
            privileged=True,
        )
    )
    row = ev.job_metrics(tasks, jobs).iloc[0]
    assert (row["tp"], row["fp"], row["fn"], row["tn"]) == (2, 0, 1, 5)
    assert row["n_tasks"] == 10 and row["n_evaluated"] == 8
    assert row["F1"] == pytest.approx(0.8)
    assert bool(row["privileged"])
    per_job, _ = ev.f1_over_time(tasks, jobs, n_points=4)
    assert per_job["fp"].tolist() == [0, 0, 0, 0]
    assert per_job["F1"].iloc[-1] == pytest.approx(0.8)


def test_failed_jobs_counted_not_averaged():
    good = make_job("j1", TEN_LATENCY, TEN_FLAGS, threshold=8.0)  # F1 4/7
    perfect = make_job("j2", TEN_LATENCY, [NAN] * 7 + [9.0, 9.5, 10.0], threshold=8.0)  # F1 1
    tasks, jobs = combine(good, perfect, failed_job("j3"))
    metrics = ev.job_metrics(tasks, jobs)
    failed = metrics[metrics["job_id"] == "j3"].iloc[0]
    assert failed["status"] == "failed"
    assert pd.isna(failed["tp"]) and np.isnan(failed["F1"])
    summary = ev.summary_table(metrics)
    assert len(summary) == 1
    row = summary.iloc[0]
    assert row["jobs_evaluated"] == 2 and row["jobs_failed"] == 1
    assert row["F1"] == pytest.approx((4 / 7 + 1.0) / 2)
    assert row["F1_std"] == pytest.approx(np.std([4 / 7, 1.0], ddof=1))
    assert row["TPR"] == pytest.approx((2 / 3 + 1.0) / 2)
    assert row["FNR"] == pytest.approx(1 - row["TPR"])


def test_job_without_stragglers_is_unscorable_not_nan_in_means():
    good = make_job("j1", TEN_LATENCY, TEN_FLAGS, threshold=8.0)
    no_stragglers = make_job("j2", TEN_LATENCY, [1.0] + [NAN] * 9, threshold=100.0)
    tasks, jobs = combine(good, no_stragglers)
    metrics = ev.job_metrics(tasks, jobs)
    assert metrics.set_index("job_id").loc["j2", "status"] == "unscorable"
    row = ev.summary_table(metrics).iloc[0]
    assert row["jobs_evaluated"] == 1 and row["jobs_unscorable"] == 1
    assert row["F1"] == pytest.approx(4 / 7)
    assert row["FPR"] == pytest.approx(2 / 7)  # j2's FPR (0.1) is not mixed in


def test_summary_order_follows_paper_families():
    latency = TEN_LATENCY
    parts = [
        make_job("j", latency, TEN_FLAGS, threshold=8.0, method=m, family=f, privileged=p)
        for m, f, p in [
            ("Oracle", "Reference", True),
            ("NURD", "Ours", False),
            ("NURD-NC", "Ours", False),
            ("Wrangler", "Systems", True),
            ("CoxPH", "Censored and survival regression", False),
            ("PU-EN", "Positive-unlabeled", False),
            ("Random", "Baselines", False),
            ("LOF", "Outlier detection", False),
            ("ABOD", "Outlier detection", False),
            ("GBTR", "Supervised", False),
        ]
    ]
    tasks, jobs = combine(*parts)
    summary = ev.summary_table(ev.job_metrics(tasks, jobs))
    assert summary["method"].tolist() == [
        "GBTR",
        "ABOD",
        "LOF",
        "PU-EN",
        "CoxPH",
        "Wrangler",
        "NURD-NC",
        "NURD",
        "Random",
        "Oracle",
    ]


def test_summary_dataset_order():
    parts = [
        make_job("j", TEN_LATENCY, TEN_FLAGS, threshold=8.0, dataset=d, method=m)
        for d in ("alibaba", "google")
        for m in ("NURD", "GBTR")
    ]
    tasks, jobs = combine(*parts)
    jobs.loc[jobs["method"] == "GBTR", "family"] = "Supervised"
    summary = ev.summary_table(ev.job_metrics(tasks, jobs), dataset_order=["google", "alibaba"])
    assert list(zip(summary["method"], summary["dataset"], strict=True)) == [
        ("GBTR", "google"),
        ("GBTR", "alibaba"),
        ("NURD", "google"),
        ("NURD", "alibaba"),
    ]


def test_f1_over_time_hand_made_job():
    # job runs 0..10 s (task 9 ends at 10). Checkpoints at 2.5, 5, 7.5, 10 (n_points=4).
    # Flags: 0.5 (fp), 3.0 (fp), 4.0 (tp), 6.0 (tp); the straggler 7 is never flagged.
    tasks, jobs = combine(make_job("j1", TEN_LATENCY, TEN_FLAGS, threshold=8.0))
    per_job, mean = ev.f1_over_time(tasks, jobs, n_points=4)
    assert per_job["k"].tolist() == [1, 2, 3, 4]
    np.testing.assert_allclose(per_job["normalised_time"], [0.25, 0.5, 0.75, 1.0])
    assert per_job["tp"].tolist() == [0, 1, 2, 2]
    assert per_job["fp"].tolist() == [1, 2, 2, 2]
    assert per_job["fn"].tolist() == [3, 2, 1, 1]
    # F1 = 2tp / (2tp + fp + fn)
    np.testing.assert_allclose(per_job["F1"], [0.0, 2 / 6, 4 / 7, 4 / 7])
    # the last point equals the final F1 of job_metrics
    final = ev.job_metrics(tasks, jobs)["F1"].iloc[0]
    assert per_job["F1"].iloc[-1] == pytest.approx(final)
    np.testing.assert_allclose(mean["F1"], per_job["F1"])
    assert (mean["n_jobs"] == 1).all()


def test_f1_over_time_uses_job_span_and_averages_jobs():
    # second job spans 100..200 s, checkpoints at 120, 140, 160, 180, 200 (n_points=5);
    # its only straggler (task 2) is flagged at 150 -> a true positive from k = 3;
    # task 3 is flagged exactly at job_end -> a false positive at k = 5 only (inclusive)
    first = make_job("j1", TEN_LATENCY, TEN_FLAGS, threshold=8.0)
    latency = np.array([10.0, 10.0, 100.0, 10.0])
    second = make_job(
        "j2",
        latency,
        [NAN, NAN, 150.0, 200.0],
        threshold=50.0,
        task_start=np.full(4, 100.0),
        job_start=100.0,
        job_end=200.0,
    )
    tasks, jobs = combine(first, second, failed_job("j3"))
    per_job, mean = ev.f1_over_time(tasks, jobs, n_points=5)
    j2 = per_job[per_job["job_id"] == "j2"]
    np.testing.assert_allclose(j2["F1"], [0, 0, 1, 1, 2 / 3])
    assert set(per_job["job_id"]) == {"j1", "j2"}  # the failed job has no rows
    j1 = per_job[per_job["job_id"] == "j1"]["F1"].to_numpy()
    np.testing.assert_allclose(mean["F1"], (j1 + j2["F1"].to_numpy()) / 2)
    assert (mean["n_jobs"] == 2).all()


def test_cost_table():
    a = make_job("j1", TEN_LATENCY, TEN_FLAGS, threshold=8.0, seconds=3.0, n_checkpoints=4)
    b = make_job("j2", TEN_LATENCY, TEN_FLAGS, threshold=8.0, seconds=5.0, n_checkpoints=6)
    tasks, jobs = combine(a, b, failed_job("j3", seconds=2.0, n_checkpoints=0))
    cost = ev.cost_table(jobs).iloc[0]
    assert cost["jobs"] == 3 and cost["jobs_failed"] == 1
    assert cost["seconds_total"] == pytest.approx(10.0)
    assert cost["seconds_per_job"] == pytest.approx(10 / 3)
    assert cost["checkpoints_total"] == 10
    assert cost["seconds_per_checkpoint"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "breakage, message",
    [
        (lambda t, j: t.assign(flag_time=np.nan), "flag_time must be NaN exactly"),
        (lambda t, j: t.assign(is_straggler=~t["is_straggler"]), "is_straggler disagrees"),
        (lambda t, j: pd.concat([t, t.iloc[:1]]), "duplicate"),
        (lambda t, j: t.assign(job_id="other"), "missing from the jobs table"),
        (lambda t, j: t.drop(columns="evaluated"), "lacks columns"),
        (lambda t, j: t.assign(flagged=t["flagged"].astype(int)), "must be bool"),
    ],
)
def test_bad_task_tables_raise(breakage, message):
    tasks, jobs = combine(make_job("j1", TEN_LATENCY, TEN_FLAGS, threshold=8.0))
    with pytest.raises(ValueError, match=message):
        ev.job_metrics(breakage(tasks, jobs), jobs)


def test_bad_job_tables_raise():
    tasks, jobs = combine(make_job("j1", TEN_LATENCY, TEN_FLAGS, threshold=8.0))
    with pytest.raises(ValueError, match="status must be one of"):
        ev.job_metrics(tasks, jobs.assign(status="done"))
    with pytest.raises(ValueError, match="whose status is 'failed'"):
        ev.job_metrics(tasks, jobs.assign(status="failed"))
    extra = pd.concat([jobs, jobs.assign(job_id="j2")], ignore_index=True)
    with pytest.raises(ValueError, match="no rows in the tasks table"):
        ev.job_metrics(tasks, extra)
    with pytest.raises(ValueError, match="job_end must be after job_start"):
        ev.f1_over_time(tasks, jobs.assign(job_end=-1.0))
    with pytest.raises(ValueError, match="n_points"):
        ev.f1_over_time(tasks, jobs, n_points=0)


def test_load_predictions_round_trip(tmp_path):
    tasks, jobs = combine(make_job("j1", TEN_LATENCY, TEN_FLAGS, threshold=8.0), failed_job("j2"))
    tasks.to_parquet(tmp_path / "tasks.parquet")
    jobs.to_parquet(tmp_path / "jobs.parquet")
    loaded_tasks, loaded_jobs = ev.load_predictions(
        [tmp_path / "tasks.parquet"], [tmp_path / "jobs.parquet"]
    )
    pd.testing.assert_frame_equal(
        ev.job_metrics(loaded_tasks, loaded_jobs), ev.job_metrics(tasks, jobs)
    )


def test_evaluation_does_not_import_method_code():
    source = Path(ev.__file__).read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    assert not any(name.startswith("stragglers.methods") for name in imported)


def test_sort_rows_keeps_each_row_once_with_repeated_index_labels():
    frame = pd.DataFrame(
        {
            "method": ["NURD", "GBTR", "Oracle"],
            "family": ["Ours", "Supervised", "Oracle"],
            "dataset": ["a", "a", "a"],
            "value": [1, 2, 3],
        },
        index=[0, 0, 1],  # e.g. concatenated frames without ignore_index
    )
    out = ev.sort_rows(frame)
    assert len(out) == 3
    assert sorted(out["value"]) == [1, 2, 3]
    assert list(out.index) == [0, 1, 2]
