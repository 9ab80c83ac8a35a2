"""The progress proxy of LATE and SRQuant (stragglers/methods/_progress.py), by hand."""

from __future__ import annotations

import numpy as np
import pytest

from stragglers.methods._progress import estimate_progress, progress_column, progress_scores
from stragglers.methods.base import Checkpoint


def _checkpoint(running_features, elapsed, finished_features, latency) -> Checkpoint:
    running_features = np.asarray(running_features, dtype=float)
    finished_features = np.asarray(finished_features, dtype=float)
    return Checkpoint(
        time=1000.0,
        index=3,
        first_prediction=False,
        finished_tasks=np.arange(len(finished_features)),
        finished_features=finished_features,
        finished_latency=np.asarray(latency, dtype=float),
        running_tasks=np.arange(len(running_features)) + len(finished_features),
        running_features=running_features,
        running_elapsed=np.asarray(elapsed, dtype=float),
    )


def test_progress_is_cpu_seconds_over_median_total():
    # finished: 0.5 * 100 = 50, 1.0 * 80 = 80, 2.0 * 60 = 120 CPU-seconds -> median 80
    # running: 0.5 * 40 = 20 -> 0.25; 2.0 * 20 = 40 -> 0.5; 1.0 * 200 = 200 -> capped at 1
    progress, rate, work, reference, basis = progress_scores(
        [0.5, 2.0, 1.0], [40.0, 20.0, 200.0], [0.5, 1.0, 2.0], [100.0, 80.0, 60.0]
    )
    assert basis == "work"
    assert reference == 80.0
    np.testing.assert_allclose(work, [20.0, 40.0, 200.0])
    np.testing.assert_allclose(progress, [0.25, 0.5, 1.0])
    np.testing.assert_allclose(rate, [0.25 / 40, 0.5 / 20, 1.0 / 200])


def test_negative_rates_count_as_zero_and_zero_elapsed_has_rate_zero():
    progress, rate, _, _, _ = progress_scores([-1.0, 1.0], [10.0, 0.0], [1.0], [50.0])
    np.testing.assert_allclose(progress, [0.0, 0.0])
    np.testing.assert_allclose(rate, [0.0, 0.0])


def test_clock_fallback_when_finished_tasks_did_no_work():
    progress, rate, _, reference, basis = progress_scores(
        [0.0, 3.0], [30.0, 60.0], [0.0, 0.0, 0.0], [100.0, 120.0, 140.0]
    )
    assert basis == "elapsed"
    assert reference == 120.0
    np.testing.assert_allclose(progress, [0.25, 0.5])
    np.testing.assert_allclose(rate, [1 / 120, 1 / 120])


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least one finished"):
        progress_scores([1.0], [1.0], [], [])
    with pytest.raises(ValueError, match="missing"):
        progress_scores([np.nan], [1.0], [1.0], [1.0])
    with pytest.raises(ValueError, match="differ"):
        progress_scores([1.0, 2.0], [1.0], [1.0], [1.0])


def test_column_choice_per_dataset_kind():
    from stragglers.formats.datasets import feature_columns

    assert progress_column(feature_columns("google-2011")) == "cpu_rate"
    assert progress_column(feature_columns("alibaba-2018")) == "cpu_avg"
    assert progress_column(feature_columns("google-2011-events")) == "cpu_request"
    assert progress_column(["io", "noise"]) is None


def test_estimate_progress_reads_the_rate_column_by_name():
    names = ["memory", "cpu_rate"]
    cp = _checkpoint(
        [[9.0, 0.5], [9.0, 2.0]],
        [40.0, 20.0],
        [[1.0, 0.5], [1.0, 1.0], [1.0, 2.0]],
        [100.0, 80.0, 60.0],
    )
    estimate = estimate_progress(cp, names)
    assert estimate.column == "cpu_rate" and estimate.basis == "work"
    np.testing.assert_allclose(estimate.progress, [0.25, 0.5])
    # without a rate column: the clock, progress = elapsed / median finished latency (80)
    estimate = estimate_progress(cp, ["memory", "io"])
    assert estimate.column is None and estimate.basis == "elapsed"
    np.testing.assert_allclose(estimate.progress, [0.5, 0.25])
