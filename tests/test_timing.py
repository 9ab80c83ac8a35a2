"""Lead and early flags (stragglers/evaluate/timing.py) on a hand-made job, by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stragglers.evaluate.timing import (
    early_flags,
    flag_lead,
    flag_leads,
    lead_over_time,
    timing_job_metrics,
    timing_summary,
)

TAU = 100.0


def hand_made_job(job_id="j1", method="M"):
    """tau = 100. Six tasks (start, end, flag):
    t0 (0, 50)    non-straggler flagged at 20                   -> early false positive
    t1 (0, 60)    non-straggler, not flagged                    -> true negative
    t2 (0, 200)   straggler flagged at 50 (elapsed 50 < 100)    -> early hit, lead 150/200
    t3 (100, 300) straggler flagged at 250 (elapsed 150 >= 100) -> late: a miss, lead 50/200
    t4 (0, 150)   straggler, not flagged                        -> miss
    t5 (0, 40)    non-straggler, not flagged                    -> true negative
    """
    start = np.array([0, 0, 0, 100, 0, 0], dtype=float)
    end = np.array([50, 60, 200, 300, 150, 40], dtype=float)
    flag = np.array([20, np.nan, 50, 250, np.nan, np.nan])
    tasks = pd.DataFrame(
        {
            "dataset": "d",
            "method": method,
            "job_id": job_id,
            "task": np.arange(6),
            "latency": end - start,
            "task_start": start,
            "task_end": end,
            "is_straggler": (end - start) >= TAU,
            "evaluated": True,
            "flagged": ~np.isnan(flag),
            "flag_time": flag,
        }
    )
    jobs = pd.DataFrame(
        [
            {
                "dataset": "d",
                "method": method,
                "family": "F",
                "privileged": False,
                "job_id": job_id,
                "status": "ok",
                "reason": "",
                "seconds": 0.1,
                "n_checkpoints": 3,
                "straggler_threshold": TAU,
                "job_start": 0.0,
                "job_end": 300.0,
                "prediction_start": 0.0,
            }
        ]
    )
    return tasks, jobs


def test_lead_and_early_by_hand():
    np.testing.assert_allclose(
        flag_lead([0, 100, 0], [200, 300, 150], [50, 250, np.nan]), [0.75, 0.25, np.nan]
    )
    np.testing.assert_array_equal(
        early_flags([0, 100, 0, 0], [50, 250, np.nan, 100], TAU), [True, False, False, False]
    )  # elapsed == tau is late


def test_early_confusion_matrix_and_median_lead_by_hand():
    tasks, jobs = hand_made_job()
    row = timing_job_metrics(tasks, jobs).iloc[0]
    assert (row["early_tp"], row["early_fp"], row["early_fn"], row["early_tn"]) == (1, 1, 2, 2)
    assert row["early_TPR"] == pytest.approx(1 / 3)
    assert row["early_precision"] == pytest.approx(0.5)
    assert row["early_F1"] == pytest.approx(2 * 1 / (2 * 1 + 1 + 2))  # 0.4
    assert row["early_share"] == pytest.approx(0.5)  # t2 early, t3 late
    assert row["median_lead"] == pytest.approx(0.5)  # median(0.75, 0.25)

    leads = flag_leads(tasks, jobs)
    assert leads["task"].tolist() == [2, 3]
    np.testing.assert_allclose(leads["lead"], [0.75, 0.25])
    assert leads["early"].tolist() == [True, False]
    np.testing.assert_allclose(leads["elapsed_at_flag"], [50.0, 150.0])


def test_lead_over_time_by_hand():
    tasks, jobs = hand_made_job()
    per_job, mean = lead_over_time(tasks, jobs, n_points=3)  # t = 100, 200, 300
    # by t=100 and t=200: t0 (fp) and t2 (early hit) flagged; by 300 also t3 (late: a miss)
    np.testing.assert_allclose(per_job["early_F1"], [0.4, 0.4, 0.4])
    np.testing.assert_allclose(per_job["median_lead"], [0.75, 0.75, 0.5])
    np.testing.assert_allclose(mean["median_lead"], [0.75, 0.75, 0.5])


def test_failed_and_unscorable_jobs_have_no_timing_metrics():
    tasks, jobs = hand_made_job()
    # j2: no straggler scored (every straggler not evaluated); j3: failed
    t2, j2 = hand_made_job("j2")
    t2["evaluated"] = ~t2["is_straggler"]
    j3 = jobs.assign(job_id="j3", status="failed", reason="boom")
    all_tasks = pd.concat([tasks, t2], ignore_index=True)
    all_jobs = pd.concat([jobs, j2, j3], ignore_index=True)
    metrics = timing_job_metrics(all_tasks, all_jobs).set_index("job_id")
    assert metrics.loc["j1", "early_F1"] == pytest.approx(0.4)
    assert np.isnan(metrics.loc["j2", "early_F1"]) and np.isnan(metrics.loc["j2", "median_lead"])
    assert np.isnan(metrics.loc["j3", "early_F1"])
    # the summary averages the scored job only (status as evaluate.job_metrics sets it)
    status = pd.Series({"j1": "ok", "j2": "unscorable", "j3": "failed"})
    frame = metrics.reset_index().assign(status=lambda f: f["job_id"].map(status))
    summary = timing_summary(frame, flag_leads(all_tasks, all_jobs)).iloc[0]
    assert summary["early_F1"] == pytest.approx(0.4)
    assert summary["median_lead"] == pytest.approx(0.5)
    assert summary["early_share"] == pytest.approx(0.5)
    assert summary["stragglers_flagged"] == 2


def test_a_late_flag_is_always_on_a_straggler():
    """Still running at elapsed tau means latency > tau: late false positives cannot exist."""
    tasks, jobs = hand_made_job()
    late = tasks["flagged"] & ~early_flags(tasks["task_start"], tasks["flag_time"], TAU)
    assert tasks.loc[late, "is_straggler"].all()


def test_lead_figure_is_written_even_for_a_method_that_found_nothing(tmp_path):
    from stragglers.evaluate.metrics import job_metrics
    from stragglers.report.tables import plot_lead_distribution

    tasks, jobs = hand_made_job()
    t2, j2 = hand_made_job(method="Silent")
    t2["flagged"], t2["flag_time"] = False, np.nan
    # frames concatenated without a new index (duplicate labels) must still give one row each
    leads = pd.concat([flag_leads(tasks, jobs), flag_leads(t2, j2)])
    metrics = pd.concat([job_metrics(tasks, jobs), job_metrics(t2, j2)])
    path = tmp_path / "lead.png"
    plot_lead_distribution(leads, metrics, path, "d")
    assert path.read_bytes().startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="lacks columns"):
        plot_lead_distribution(leads.drop(columns="lead"), metrics, path, "d")
