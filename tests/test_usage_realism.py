"""The usage-realism statistics (stragglers/replay/usage_realism.py) on hand-made jobs whose
numbers are worked out by hand, and the command on a tiny converted dataset of the NURD
authors' layout."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from jobfactory import hand_job

from stragglers.convert.one_process import convert_dataset
from stragglers.replay.usage_realism import (
    ABS,
    ACTIVE_CV,
    IDLE_FIRST,
    IDLE_SPEARMAN,
    KIND,
    LOG,
    SPEARMAN_JOB,
    SPEARMAN_POOLED,
    STARTUP,
    WIND_DOWN,
    at_life,
    comparison,
    latency_tails,
    main,
    no_window_yet,
    partial_gap,
    still_zero,
    summarise,
    task_statistics,
)

FEATURES = ["x"]


def test_start_up_and_partial_sums_of_a_task_worked_by_hand():
    # task 0: an idle first window, then usage; life 50 s, mean (0*10 + 2*10 + 2*20 + 1*10)/50
    # task 1: one window
    job = hand_job([[(10, 0.0), (10, 2.0), (20, 2.0), (10, 1.0)], [(30, 3.0)]])
    tasks = task_statistics(job, FEATURES)
    first, second = tasks.iloc[0], tasks.iloc[1]
    assert first["life_s"] == 50 and first["n_windows"] == 4
    assert first["first_share"] == pytest.approx(0.2)
    assert first["first_s"] == 10 and first["last_s"] == 10 and second["last_s"] == 30
    assert first["x"] == pytest.approx(1.4)
    assert first[f"{STARTUP}|x"] == 0 and first[f"{WIND_DOWN}|x"] == pytest.approx(1 / 1.4)
    assert first["first_idle"] == 1 and first["last_idle"] == 0
    assert first["idle_s"] == 10 and first["idle_share"] == pytest.approx(0.2)
    # its non-idle windows 2, 2, 1 for 10, 20, 10 s: mean 1.75, weighted variance 3.25 - 1.75^2
    assert first["active|x"] == pytest.approx(1.75)
    assert first[f"{ACTIVE_CV}|x"] == pytest.approx(np.sqrt(3.25 - 1.75**2) / 1.75)
    # the window covering 12.5 s, 25 s and 37.5 s of life holds 2.0
    for fraction in (0.25, 0.5, 0.75):
        assert first[f"{at_life(fraction)}|x"] == pytest.approx(2 / 1.4)
    # windows ended by 12.5 s: the idle one (running mean 0); by 25 s and 37.5 s: two (mean 1)
    assert first[f"{partial_gap(0.25)}|x"] == pytest.approx(1.0)
    assert first[f"{still_zero(0.25)}|x"] == 1
    assert first[f"{partial_gap(0.5)}|x"] == pytest.approx(0.4 / 1.4)
    assert first[f"{partial_gap(0.75)}|x"] == pytest.approx(0.4 / 1.4)
    assert first[f"{still_zero(0.75)}|x"] == 0
    assert first[no_window_yet(0.25)] == 0
    # a one-window task: its whole life in the first window, no window ended before its end
    assert second["first_share"] == 1 and second[f"{STARTUP}|x"] == 1
    assert second["first_idle"] == 0 and second["idle_s"] == 0
    assert second["active|x"] == 3 and np.isnan(second[f"{ACTIVE_CV}|x"])  # one window
    assert np.isnan(second[f"{partial_gap(0.75)}|x"]) and second[no_window_yet(0.75)] == 1


def test_latency_tails_and_correlations_of_hand_made_jobs():
    # job a: latencies 10..100 and one of 1000, job b 1..10 and 100 (a task: one window of
    # its latency); x rises with latency in both
    latencies = {"a": [*range(10, 101, 10), 1000], "b": [*range(1, 11), 100]}
    tables = []
    for job_id, values in latencies.items():
        job = hand_job([[(float(v), 1.0 + i)] for i, v in enumerate(values)], name=job_id)
        tables.append(task_statistics(job, FEATURES))
    tasks = pd.concat(tables, ignore_index=True)
    tails = latency_tails(tasks)
    assert tails.loc["a", "p90/p50"] == pytest.approx(np.quantile(latencies["a"], 0.9) / 60)
    assert tails.loc["a", "max/p50"] == pytest.approx(1000 / 60)
    assert tails.loc["b", "p99/p50"] == pytest.approx(np.quantile(latencies["b"], 0.99) / 6)
    assert tails.loc["a", "share above 2x median"] == pytest.approx(1 / 11)  # only 1000 > 120
    summary = summarise(tasks, np.array([1.0, 2.0, 3.0]), FEATURES).set_index(
        ["statistic", "feature"]
    )["value"]
    assert summary[(SPEARMAN_JOB, "x")] == pytest.approx(1.0)
    assert summary[(SPEARMAN_POOLED, "x")] == pytest.approx(1.0)
    assert summary[("jobs", "")] == 2 and summary[("tasks", "")] == 22
    assert summary[("window length q50 (s)", "")] == 2
    assert summary[("share of tasks with one window", "")] == 1
    assert summary[("latency max/p50 within a job (max over jobs)", "")] == pytest.approx(
        max(1000 / 60, 100 / 6)
    )


def test_distances_are_log_ratios_or_differences_by_statistic():
    reference = pd.DataFrame(
        [("length", "", 10.0, LOG), ("share", "", 0.2, ABS), ("n", "", 3.0, "")],
        columns=["statistic", "feature", "value", KIND],
    )
    generated = reference.assign(value=[100.0, 0.5, 4.0])
    table = comparison({"real": reference, "gen": generated}).set_index("statistic")
    assert table.loc["length", "distance gen"] == pytest.approx(np.log(10))
    assert table.loc["share", "distance gen"] == pytest.approx(0.3)
    assert np.isnan(table.loc["n", "distance gen"])


def test_the_command_on_a_tiny_converted_dataset_is_at_distance_zero_from_itself(tmp_path):
    job = tmp_path / "raw" / "77"
    job.mkdir(parents=True)
    for task in range(4):  # an idle window of (task + 1) x 5 s, then (task + 1) x 20 s of usage
        start = 600_000_000
        middle, end = start + 5_000_000 * (task + 1), start + 25_000_000 * (task + 1)
        rows = []
        for w0, w1, value in ((start, middle, 0.0), (middle, end, 0.01 * (task + 1))):
            rows.append(
                ",".join([str(w0), str(w1), "77", str(task), "5", *[f"{value:f}"] * 15, "0", "0"])
            )
        (job / str(task)).write_text("\n".join(rows) + "\n")
    convert_dataset(
        kind="nurd-timeseries",
        raw_dir=str(tmp_path / "raw"),
        out_dir=str(tmp_path / "converted"),
        dataset="tiny",
        n_shards=1,
        min_tasks=1,
    )
    converted = str(tmp_path / "converted")
    assert main([converted, converted, "--names", "a,b", "--out", str(tmp_path / "out")]) == 0
    table = pd.read_csv(tmp_path / "out" / "usage_realism.csv").fillna({"feature": ""})
    assert set(table["distance b"].dropna()) == {0.0}
    values = table.set_index(["statistic", "feature"])["a"]
    assert values[(STARTUP, "cpu_rate")] == 0
    assert values[(IDLE_FIRST, "")] == 1 and values[(IDLE_SPEARMAN, "")] == pytest.approx(1.0)
    assert values[(SPEARMAN_JOB, "cpu_rate")] == pytest.approx(1.0)
    assert values[("windows per task (median)", "")] == 2
    for name in ("usage_realism.md", "usage_realism_compact.md"):
        assert (Path(tmp_path / "out" / name)).read_text().startswith("| statistic |")
