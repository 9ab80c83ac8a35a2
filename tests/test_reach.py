"""The paper protocol's flag-all rates (stragglers/replay/reach.py): by hand, and equal to what
a method that flags every running task scores in the replay itself."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

from stragglers.formats.raw import GOOGLE_TASK_EVENTS, GOOGLE_TRACE_START_US, EventType
from stragglers.replay import reach
from stragglers.traces.calibrate import read_task_events


def test_window_counts_on_the_300_s_grid():
    start = GOOGLE_TRACE_START_US + np.array([0, 10, 299, 0]) * 1_000_000
    end = GOOGLE_TRACE_START_US + np.array([300, 320, 301, 900]) * 1_000_000
    assert reach.window_counts(start, end).tolist() == [1, 2, 2, 3]


def test_job_reach_by_hand():
    # 20 tasks: 18 of 2 windows, then 3 and 6 windows. tau = sorted[18] -> stragglers: the
    # 3- and 6-window tasks (K = 6: checkpoints 2, 3, 4); initial: sorted[int(0.04 * 20)] =
    # sorted[0] -> none below it. Pruning: stragglers with fewer windows than 4.5 - 1 = 3.5:
    # the 3-window one. Non-stragglers never reach k = 2 (2 windows: indices 0, 1).
    latency = np.array([600.0 + i for i in range(18)] + [900.0, 1800.0])
    n_windows = np.array([2] * 18 + [3, 6])
    row = reach.job_reach(latency, n_windows)
    assert row["n_checkpoints"] == 3
    assert (row["stragglers_scored"], row["stragglers_reaching"]) == (1, 1)
    assert (row["others_scored"], row["others_reaching"]) == (18, 0)
    assert row["flag_all_TPR"] == 1.0 and row["flag_all_FPR"] == 0.0
    # a longest straggler of 3 windows: no scored checkpoint, nothing reaches
    short = reach.job_reach(latency[:19], n_windows[:19])
    assert short["n_checkpoints"] == 0 and short["stragglers_reaching"] == 0
    assert np.isnan(short["flag_all_TPR"]) and np.isnan(short["flag_all_FPR"])  # no result


def _events_file(path, tasks):
    """task_events rows of (job, index, start s, end s, priority): SCHEDULE and FINISH."""
    rows = []
    for job, index, start, end, priority in tasks:
        for time, event in ((start, EventType.SCHEDULE), (end, EventType.FINISH)):
            row = dict.fromkeys(GOOGLE_TASK_EVENTS, "")
            row.update(
                timestamp=GOOGLE_TRACE_START_US + int(time * 1e6),
                job_id=job,
                task_index=index,
                event_type=int(event),
                priority=priority,
            )
            rows.append(row)
    frame = pd.DataFrame(rows, columns=GOOGLE_TASK_EVENTS)
    with gzip.open(path, "wt") as out:
        frame.to_csv(out, header=False, index=False)


def test_the_command_reads_task_events_and_keeps_the_asked_priorities(tmp_path, capsys):
    tasks = [(1, i, 0.0, 500.0 + i, 9) for i in range(18)] + [
        (1, 18, 0, 700, 9),
        (1, 19, 0, 1700, 9),
    ]
    tasks += [(2, i, 0.0, 3000.0 + 10 * i, 0) for i in range(20)]
    path = tmp_path / "part-00000-of-00001.csv.gz"
    _events_file(path, tasks)
    table = reach.reach_table(read_task_events(path), min_tasks=20)
    assert table["job_id"].tolist() == [1, 2]
    first = table.iloc[0]
    assert first["flag_all_TPR"] == 1.0 and first["flag_all_FPR"] == 0.0
    second = table.iloc[1]  # 10-11 windows each: every scored task reaches k = 2
    assert second["flag_all_TPR"] == 1.0 and second["flag_all_FPR"] == 1.0
    production = reach.reach_table(read_task_events(path, [9, 10, 11]), min_tasks=20)
    assert production["job_id"].tolist() == [1]
    summary = reach.reach_summary(table)
    assert summary["flag-all FPR (mean over those jobs)"] == pytest.approx(0.5)
    assert summary["jobs with a scored checkpoint"] == 1.0
    assert reach.main([str(path), "--min-tasks", "20", "--out", str(tmp_path / "r.csv")]) == 0
    assert "flag-all TPR" in capsys.readouterr().out
    assert len(pd.read_csv(tmp_path / "r.csv")) == 2


def test_flag_all_rates_are_what_a_flag_everything_method_scores_in_the_replay():
    """The replay under `protocol: paper` with a method that flags every running task scores
    exactly the flag-all rates from the job's latencies and window counts."""
    from jobfactory import make_job

    from stragglers.evaluate.metrics import job_metrics
    from stragglers.methods.base import Method
    from stragglers.replay import aligned
    from stragglers.replay.core import ReplaySettings
    from stragglers.replay.runner import run_method_on_jobs

    class FlagAll(Method):
        name = "FlagAll"
        family = "test"

        def predict(self, checkpoint):
            return np.ones(len(checkpoint.running_tasks), dtype=bool)

    settings = ReplaySettings(protocol="paper", checkpoint_interval=300)
    for seed in (1, 2, 3):
        job = make_job(n_tasks=150, seed=seed)
        tasks, jobs = run_method_on_jobs(
            iter([job]), FlagAll, {}, settings, np.zeros(len(job.feature_names), bool), 0, "d"
        )
        metrics = job_metrics(tasks, jobs).iloc[0]
        view = aligned.build_view(
            job, np.zeros(len(job.feature_names), bool), "divided_by_final", 300.0
        )
        expected = reach.job_reach(view.latency, view.n_windows)
        assert metrics["TPR"] == pytest.approx(expected["flag_all_TPR"])
        assert metrics["FPR"] == pytest.approx(expected["flag_all_FPR"])


def test_usage_shape_reads_a_generated_trace_and_summarises_each_column(tmp_path, capsys):
    """stragglers.traces.usage_shape: one row per usage column, medians over (job, window)
    groups of at least min_tasks tasks; positions lie in [0, 1]."""
    from stragglers.traces import usage_shape
    from stragglers.traces.generate import GoogleGeneratorConfig, generate_google

    generate_google(tmp_path / "g", GoogleGeneratorConfig(n_jobs=2, seed=4))
    table = usage_shape.usage_shape(usage_shape.read_usage(tmp_path / "g"), min_tasks=20)
    assert list(table.index) == list(usage_shape.USAGE_COLUMNS)
    assert table["position"].between(0, 1).all() and (table["groups"] > 0).all()
    # a job's memory sits low in its range with high outliers (the signatures), as
    # docs/generator.md says of the generated traces
    assert table.loc["canonical_memory_usage", "log_skew"] > 0
    assert usage_shape.main([str(tmp_path / "g")]) == 0
    assert "log_skew" in capsys.readouterr().out
    with pytest.raises(FileNotFoundError, match="no task_usage part files"):
        usage_shape.read_usage(tmp_path)


def test_the_summary_gives_the_window_counts_of_the_jobs_with_a_result_apart():
    """Means of the flag-all rates over the jobs with a result; window counts over all jobs
    and over the jobs with a result (hand-made per-job rows)."""
    table = pd.DataFrame(
        {
            "job_id": [1, 2, 3],
            "n_checkpoints": [0, 2, 5],
            "flag_all_TPR": [np.nan, 1.0, 0.5],
            "flag_all_FPR": [np.nan, 0.6, 1.0],
            "median_windows": [1.0, 3.0, 7.0],
        }
    )
    summary = reach.reach_summary(table)
    assert summary["jobs with a scored checkpoint"] == pytest.approx(2 / 3)
    assert summary["flag-all FPR (mean over those jobs)"] == pytest.approx(0.8)
    assert summary["median windows per task (median over jobs)"] == 3.0
    assert summary["median windows per task (median over the jobs with a result)"] == 5.0
