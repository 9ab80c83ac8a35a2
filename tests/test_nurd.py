"""NURD's arithmetic on hand-made numbers, and its behaviour on a job with a clear signature."""

import numpy as np
import pytest
from jobfactory import LAST, make_job

from stragglers.methods.base import Checkpoint, JobInfo
from stragglers.methods.nurd import (
    NURD,
    adjusted_prediction,
    calibration_term,
    centroid_ratio,
    fit_logistic,
    predict_logistic,
    propensity_weight,
)
from stragglers.replay.core import ReplaySettings
from stragglers.replay.runner import run_method_on_jobs


def test_centroid_ratio_by_hand():
    finished = np.array([[1.0, 0.0], [3.0, 0.0]])  # c_fin = (2, 0), ||c_fin||^2 = 4
    running = np.array([[2.0, 1.0], [2.0, 3.0]])  # c_run = (2, 2), ||c_run - c_fin||^2 = 4
    assert centroid_ratio(finished, running) == pytest.approx(1.0)
    running_far = np.array([[2.0, 4.0]])  # distance^2 = 16
    assert centroid_ratio(finished, running_far) == pytest.approx(0.25)
    assert centroid_ratio(finished, finished) == np.inf


def test_calibration_term_by_hand():
    assert calibration_term(1.0, 0.5) == pytest.approx(0.0)
    assert calibration_term(0.25, 0.5) == pytest.approx(0.3)  # 1/1.25 - 0.5
    assert calibration_term(3.0, 0.5) == pytest.approx(-0.25)
    assert calibration_term(np.inf, 0.5) == pytest.approx(-0.5)


def test_weight_clamps_to_epsilon_and_one():
    z = np.array([0.0, 0.2, 0.6, 0.95])
    np.testing.assert_allclose(propensity_weight(z, -0.25, 0.05), [0.05, 0.05, 0.35, 0.7])
    np.testing.assert_allclose(propensity_weight(z, 0.3, 0.05), [0.3, 0.5, 0.9, 1.0])
    np.testing.assert_allclose(
        adjusted_prediction(np.array([10.0, 10.0]), np.array([0.05, 0.5])), [200, 20]
    )


def test_newton_logistic_matches_scikit_learn():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 4))
    y = (x[:, 0] - 0.5 * x[:, 2] + rng.normal(scale=0.8, size=300) > 0).astype(float)
    beta = fit_logistic(x, y, l2=1.0)
    reference = LogisticRegression(C=1.0, tol=1e-10, max_iter=1000).fit(x, y)
    np.testing.assert_allclose(beta[1:], reference.coef_[0], atol=1e-4)
    assert beta[0] == pytest.approx(reference.intercept_[0], abs=1e-4)
    np.testing.assert_allclose(
        predict_logistic(beta, x), reference.predict_proba(x)[:, 1], atol=1e-5
    )


def _sklearn_optimum(x, y):
    from sklearn.linear_model import LogisticRegression

    reference = LogisticRegression(C=1.0, tol=1e-12, max_iter=100_000).fit(x, y)
    return np.r_[reference.intercept_, reference.coef_[0]]


def _many_finish_at_once(seed: int):
    """Two checkpoints of a job's propensity fit: at the first, the 5% of tasks with the
    lowest (noisy) first feature have finished; at the next, 80% have, all at once."""
    rng = np.random.default_rng(seed)
    n, d = 120, 3
    x = rng.random((n, d))
    order = np.argsort(x[:, 0] + 0.3 * rng.random(n))
    first, then = np.zeros(n), np.zeros(n)
    first[order[:6]] = 1.0
    then[order[:96]] = 1.0
    return x, first, then


def test_warm_start_before_many_tasks_finish_reaches_the_optimum():
    # Newton warm-started from the previous checkpoint's optimum once diverged here
    # (objective ~1e13, intercept ~1e11); scikit-learn's optimum is the independent answer
    x, first, then = _many_finish_at_once(0)
    warm = fit_logistic(x, first, l2=1.0)
    beta = fit_logistic(x, then, l2=1.0, initial=warm)
    np.testing.assert_allclose(beta, _sklearn_optimum(x, then), atol=1e-4)


def test_nurd_propensity_after_a_checkpoint_where_many_tasks_finish():
    x, first, then = _many_finish_at_once(1)
    method = NURD({"alpha": 0.0, "regressor": "xgboost"}, seed=0)
    method.start_job(JobInfo("j", len(x), ("a", "b", "c"), straggler_threshold=1.0, seed=0))
    for labels in (first, then):
        done, running = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
        checkpoint = Checkpoint(
            time=0.0,
            index=2,
            first_prediction=labels is first,
            finished_tasks=done,
            finished_features=x[done],
            finished_latency=x[done, 0],
            running_tasks=running,
            running_features=x[running],
            running_elapsed=np.zeros(len(running)),
            prescaled=True,
        )
        method.predict(checkpoint)
    # features as given (prescaled), finished = 1 vs running = 0
    stacked = np.vstack([x[then == 1], x[then == 0]])
    labels = np.r_[np.ones(int(then.sum())), np.zeros(int((then == 0).sum()))]
    np.testing.assert_allclose(method.propensity_beta, _sklearn_optimum(stacked, labels), atol=1e-4)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    warm=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=4, max_size=4),
    share=st.floats(0.05, 0.95),
)
def test_any_warm_start_reaches_scikit_learns_optimum(seed, warm, share):
    rng = np.random.default_rng(seed)
    n = 80
    x = rng.random((n, 3))
    labels = (rng.random(n) < share).astype(float)
    if labels.sum() in (0, n):
        labels[0] = 1.0 - labels[0]
    beta = fit_logistic(x, labels, l2=1.0, initial=np.asarray(warm))
    np.testing.assert_allclose(beta, _sklearn_optimum(x, labels), atol=1e-4)


def _checkpoint(finished, running, latency):
    return Checkpoint(
        time=900.0,
        index=1,
        first_prediction=True,
        finished_tasks=np.arange(len(finished)),
        finished_features=finished,
        finished_latency=latency,
        running_tasks=np.arange(len(running)) + len(finished),
        running_features=running,
        running_elapsed=np.full(len(running), 10.0),
    )


def test_nurd_flags_by_adjusted_prediction():
    """Running tasks far from the finished ones get small weights and are flagged; those
    that look like finished tasks keep w = 1 and their (short) predicted latency."""
    rng = np.random.default_rng(1)
    finished = rng.normal(0.0, 0.1, size=(40, 2)) + 1.0
    latency = 100 + 10 * rng.random(40)
    far = rng.normal(0.0, 0.1, size=(10, 2)) + 4.0
    running = np.vstack([finished[:5] + 0.01, far])
    method = NURD({"n_estimators": 20})
    method.start_job(JobInfo("j", 55, ("a", "b"), straggler_threshold=140.0, seed=0))
    flags = method.predict(_checkpoint(finished, running, latency))
    assert flags.dtype == bool and flags.shape == (15,)
    assert flags.tolist() == [False] * 5 + [True] * 10
    # far running centroid: rho < 1, so delta > 0 (the paper's left-hand regime of Figure 1)
    assert method.rho < 1 and method.delta == pytest.approx(calibration_term(method.rho, 0.5))


@pytest.mark.parametrize("name", ["NURD", "NURD-NC", "GBTR"])
def test_negative_unlabeled_family_runs_on_jobs(name):
    from stragglers.methods import get_method

    jobs = [make_job(150, seed=s) for s in range(2)]
    tasks, rows = run_method_on_jobs(
        iter(jobs), get_method(name), {"n_estimators": 20}, ReplaySettings(), LAST, 3, "d"
    )
    assert (rows["status"] == "ok").all(), rows["reason"].tolist()
    assert rows["n_checkpoints"].min() >= 1


def test_same_seed_same_flags():
    from stragglers.methods import get_method

    job = make_job(150, seed=4)
    a, _ = run_method_on_jobs(iter([job]), get_method("NURD"), {}, ReplaySettings(), LAST, 5, "d")
    b, _ = run_method_on_jobs(iter([job]), get_method("NURD"), {}, ReplaySettings(), LAST, 5, "d")
    np.testing.assert_array_equal(a["flag_time"].to_numpy(), b["flag_time"].to_numpy())


def test_bad_nurd_settings_are_clear_errors():
    with pytest.raises(ValueError, match="regressor"):
        NURD({"regressor": "forest"}).start_job(JobInfo("j", 10, ("a",), 1.0, 0))
    with pytest.raises(ValueError, match="epsilon"):
        NURD({"epsilon": 0}).start_job(JobInfo("j", 10, ("a",), 1.0, 0))
