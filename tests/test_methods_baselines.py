"""Tests of the Table 3 comparison methods (everything but NURD, NURD-NC, GBTR and Oracle).

Jobs are built by hand: a small replay here (`replay`) feeds each method Checkpoint objects the
way the pipeline's replay does (finished tasks with latency, running tasks with elapsed time,
flagged tasks dropped), except that privileged methods' training tasks stay in the checkpoints.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime, check_grad

from stragglers.methods import Checkpoint, JobInfo, available_methods, get_method
from stragglers.methods._censored import (
    censoring_points,
    fit_tobit,
    gaussian_flags,
    to_target,
    tobit_grad_hess,
    tobit_negloglik,
)
from stragglers.methods._features import fit_standardizer, job_seed, varying_columns
from stragglers.methods._online import needs_refit
from stragglers.methods._pu import PlattSVC
from stragglers.methods.cblof import cblof_attempts
from stragglers.methods.coxph import BaselineHazard, weibull_tail_shape
from stragglers.methods.wrangler import oversample_minority, stratified_training_split

BASELINES = {
    "ABOD": "Outlier detection",
    "CBLOF": "Outlier detection",
    "HBOS": "Outlier detection",
    "IFOREST": "Outlier detection",
    "KNN": "Outlier detection",
    "LOF": "Outlier detection",
    "MCD": "Outlier detection",
    "OCSVM": "Outlier detection",
    "PCA": "Outlier detection",
    "SOS": "Outlier detection",
    "LSCP": "Outlier detection",
    "COF": "Outlier detection",
    "SOD": "Outlier detection",
    "XGBOD": "Outlier detection",
    "PU-EN": "Positive-unlabeled",
    "PU-BG": "Positive-unlabeled",
    "Tobit": "Censored and survival regression",
    "Grabit": "Censored and survival regression",
    "CoxPH": "Censored and survival regression",
    "Wrangler": "Systems",
}


# ---------------------------------------------------------------------------------------------
# a hand-built job and a minimal replay


def structured_job(n: int = 200, d: int = 6, seed: int = 0):
    """10% stragglers whose first two features are shifted by +3 sd (plus N(0, 2^2) noise, so
    that they are scattered rather than one tight cluster: PyOD's SOS, scoring a batch, does
    not see a cluster of stragglers as outlying) and whose latency is 3-5x a normal task's;
    normal tasks' latencies do not depend on their features."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n, d))
    stragglers = np.zeros(n, dtype=bool)
    stragglers[rng.choice(n, size=n // 10, replace=False)] = True
    features[stragglers, :2] += 3.0 + 2.0 * rng.normal(size=(int(stragglers.sum()), 2))
    latency = np.where(stragglers, rng.uniform(300, 500, n), rng.uniform(50, 100, n))
    start = rng.uniform(0, 10, n)
    return features, latency, start


def job_info(method_cls, latency: np.ndarray, d: int, tau: float, seed: int = 7) -> JobInfo:
    return JobInfo(
        job_id="test-job",
        n_tasks=len(latency),
        feature_names=tuple(f"f{i}" for i in range(d)),
        straggler_threshold=tau,
        seed=seed,
        true_latency=latency.copy() if method_cls.privileged else None,
    )


def replay(method, features, latency, start, n_checkpoints=10, start_share=0.2):
    """Flags per task (True once flagged) and the tasks that count for the metrics."""
    n, d = features.shape
    tau = float(np.quantile(latency, 0.9))
    end = start + latency
    first = np.sort(end)[int(start_share * n)]
    method.start_job(job_info(type(method), latency, d, tau))
    excluded = np.zeros(n, dtype=bool)
    trained_on = method.excluded_from_evaluation()
    if trained_on is not None:
        excluded[trained_on] = True
    flagged = np.zeros(n, dtype=bool)
    for k, t in enumerate(np.linspace(first, end.max(), n_checkpoints)):
        fin = np.flatnonzero((end <= t) & ~flagged)
        run = np.flatnonzero((end > t) & (start <= t) & ~flagged)
        if len(run) == 0:
            break
        flags = method.predict(
            Checkpoint(
                time=float(t),
                index=k,
                first_prediction=k == 0,
                finished_tasks=fin,
                finished_features=features[fin],
                finished_latency=latency[fin],
                running_tasks=run,
                running_features=features[run],
                running_elapsed=t - start[run],
            )
        )
        assert flags.dtype == bool and flags.shape == run.shape
        flagged[run[flags]] = True
    considered = (end > first) & ~excluded
    return flagged[considered], (latency >= tau)[considered]


def rates(flagged: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    tp = np.sum(flagged & truth)
    fp = np.sum(flagged & ~truth)
    fn = np.sum(~flagged & truth)
    tpr = tp / max(tp + fn, 1)
    fpr = fp / max(np.sum(~truth), 1)
    f1 = 2 * tp / max(2 * tp + fp + fn, 1)
    return float(tpr), float(fpr), float(f1)


def random_flagger_f1(flag_rate: float, base_rate: float) -> float:
    """Expected F1 of flagging each task independently with probability flag_rate."""
    if flag_rate == 0:
        return 0.0
    return 2 * base_rate * flag_rate / (base_rate + flag_rate)


# ---------------------------------------------------------------------------------------------
# every baseline, end to end


def test_registry_has_every_baseline_with_its_family():
    names = set(available_methods())
    assert set(BASELINES) <= names
    for name, family in BASELINES.items():
        cls = get_method(name)
        assert cls.family == family
        assert cls.privileged == (name == "Wrangler")


# PU-BG with pulearn's default bags flags nearly every running task while finished tasks are
# few (as in the paper's Google column): tested separately below
DETECTION_PARAMS = {"PU-BG": {"max_samples": "balanced"}}


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_detects_stragglers_better_than_chance(name):
    features, latency, start = structured_job()
    method = get_method(name)(DETECTION_PARAMS.get(name, {}), seed=3)
    flagged, truth = replay(method, features, latency, start)
    tpr, fpr, f1 = rates(flagged, truth)
    chance = random_flagger_f1(flagged.mean(), truth.mean())
    assert tpr - fpr >= 0.2, (name, tpr, fpr)
    assert f1 >= chance + 0.05, (name, f1, chance)


def test_pu_bagging_with_default_bags_flags_almost_everything():
    features, latency, start = structured_job()
    flagged, truth = replay(get_method("PU-BG")({}, seed=3), features, latency, start)
    tpr, fpr, _ = rates(flagged, truth)
    assert tpr == 1.0 and fpr > 0.8


# a non-privileged method never touches JobInfo.true_latency, and a checkpoint without a
# running task gives an empty answer: checked for every registered method by
# tests/test_method_contract.py (check_no_latency_peeking, check_degenerate_checkpoints)


def test_wrangler_ignores_the_labels_of_the_tasks_it_predicts():
    features, latency, start = structured_job(seed=5)
    cls = get_method("Wrangler")
    tau = float(np.quantile(latency, 0.9))
    end = start + latency
    t = float(np.sort(end)[60])
    fin, run = np.flatnonzero(end <= t), np.flatnonzero(end > t)
    cp = Checkpoint(
        time=t,
        index=3,
        first_prediction=True,
        finished_tasks=fin,
        finished_features=features[fin],
        finished_latency=latency[fin],
        running_tasks=run,
        running_features=features[run],
        running_elapsed=t - start[run],
    )
    first = cls({}, seed=0)
    first.start_job(job_info(cls, latency, features.shape[1], tau))
    training = np.zeros(len(latency), dtype=bool)
    training[first.excluded_from_evaluation()] = True
    flags = first.predict(cp)
    assert not flags[training[run]].any()  # never flags its own training tasks
    # shuffle the true latencies of the test tasks among themselves: the training split is
    # drawn per class, so keep each test task's class by permuting within a class
    shuffled = latency.copy()
    rng = np.random.default_rng(0)
    for cls_mask in (latency >= tau, latency < tau):
        test_idx = np.flatnonzero(~training & cls_mask)
        shuffled[test_idx] = rng.permutation(latency[test_idx])
    second = cls({}, seed=0)
    second.start_job(job_info(cls, shuffled, features.shape[1], tau))
    np.testing.assert_array_equal(
        second.excluded_from_evaluation(), first.excluded_from_evaluation()
    )
    np.testing.assert_array_equal(second.predict(cp), flags)


def test_wrangler_needs_its_training_tasks_in_the_checkpoints():
    features, latency, start = structured_job(n=60, seed=6)
    cls = get_method("Wrangler")
    method = cls({}, seed=0)
    tau = float(np.quantile(latency, 0.9))
    method.start_job(job_info(cls, latency, features.shape[1], tau))
    test = np.setdiff1d(np.arange(60), method.excluded_from_evaluation())
    cp = Checkpoint(
        time=60.0,
        index=0,
        first_prediction=True,
        finished_tasks=np.zeros(0, int),
        finished_features=np.zeros((0, features.shape[1])),
        finished_latency=np.zeros(0),
        running_tasks=test,
        running_features=features[test],
        running_elapsed=np.full(len(test), 5.0),
    )
    with pytest.raises(RuntimeError, match="training tasks"):
        method.predict(cp)
    with pytest.raises(ValueError, match="true_latency"):
        cls({}, seed=0).start_job(JobInfo("j", 60, ("a",), tau, 0, None))


# ---------------------------------------------------------------------------------------------
# degenerate checkpoints


def _degenerate_cases():
    rng = np.random.default_rng(11)
    d = 5
    n = 40
    features = rng.normal(size=(n, d))
    latency = rng.uniform(50, 100, n)
    latency[:4] = 400.0
    cases = {}
    # one running task among many finished
    fin, run = np.arange(1, n), np.array([0])
    cases["one running"] = (features, latency, fin, run)
    # five finished tasks, the rest running
    fin, run = np.arange(4, 9), np.r_[np.arange(0, 4), np.arange(9, n)]
    cases["five finished"] = (features, latency, fin, run)
    # two constant feature columns
    constant = features.copy()
    constant[:, 1] = 3.0
    constant[:, 3] = 0.0
    cases["constant columns"] = (constant, latency, np.arange(10, n), np.arange(0, 10))
    # every feature constant
    cases["all constant"] = (np.ones((n, d)), latency, np.arange(10, n), np.arange(0, 10))
    # a single finished task
    cases["one finished"] = (
        features,
        latency,
        np.array([5]),
        np.r_[np.arange(0, 5), np.arange(6, n)],
    )
    # finished tasks that are exact duplicates of each other
    duplicated = features.copy()
    duplicated[10:] = duplicated[10]
    cases["duplicate finished"] = (duplicated, latency, np.arange(10, n), np.arange(0, 10))
    return cases


DEGENERATE = _degenerate_cases()


@pytest.mark.parametrize("case", sorted(DEGENERATE))
@pytest.mark.parametrize("name", sorted(BASELINES))
def test_degenerate_checkpoints_do_not_raise(name, case):
    features, latency, fin, run = DEGENERATE[case]
    cls = get_method(name)
    method = cls({}, seed=0)
    tau = float(np.quantile(latency, 0.9))
    method.start_job(job_info(cls, latency, features.shape[1], tau))
    elapsed = np.linspace(10.0, 120.0, len(run))
    for k in range(2):  # the second call goes through the cached fit
        flags = method.predict(
            Checkpoint(
                time=120.0 + k,
                index=k,
                first_prediction=k == 0,
                finished_tasks=fin,
                finished_features=features[fin],
                finished_latency=np.minimum(latency[fin], 100.0),
                running_tasks=run,
                running_features=features[run],
                running_elapsed=elapsed + k,
            )
        )
        assert flags.dtype == bool and flags.shape == run.shape


def test_bad_checkpoint_shapes_name_the_job():
    cls = get_method("KNN")
    method = cls({}, seed=0)
    method.start_job(JobInfo("job-42", 4, ("a", "b"), 10.0, 0))
    with pytest.raises(ValueError, match="job-42.*running_features"):
        method.predict(
            Checkpoint(
                time=1.0,
                index=0,
                first_prediction=True,
                finished_tasks=np.array([0, 1]),
                finished_features=np.ones((2, 2)),
                finished_latency=np.ones(2),
                running_tasks=np.array([2, 3]),
                running_features=np.ones((2, 3)),
                running_elapsed=np.ones(2),
            )
        )


@pytest.mark.parametrize(
    "name,params",
    [
        ("Tobit", {"censoring": "sometimes"}),
        ("Grabit", {"target": "seconds"}),
        ("CoxPH", {"decision": "mean"}),
        ("CoxPH", {"baseline_tail": "linear"}),
        ("XGBOD", {"tos_detectors": "all"}),
        ("KNN", {"refit_growth": -1}),
        ("LOF", {"no_such_setting": 1}),
        ("Wrangler", {"train_fraction": 1.5}),
        ("PU-BG", {"max_samples": 0}),
    ],
)
def test_bad_settings_are_rejected(name, params):
    with pytest.raises(ValueError):
        get_method(name)(params, seed=0)


@pytest.mark.parametrize("name", ["Tobit", "CoxPH", "Grabit"])
def test_reference_code_censoring_runs(name):
    features, latency, start = structured_job(n=120, seed=8)
    flagged, truth = replay(
        get_method(name)({"censoring": "max_finished"}, seed=0),
        features,
        latency,
        start,
        n_checkpoints=5,
    )
    assert flagged.shape == truth.shape


def test_outlier_flag_cache_matches_direct_scoring():
    """A running task whose features did not change is not rescored; others are."""
    features, latency, start = structured_job(n=150, seed=9)
    cls = get_method("LOF")
    method = cls({"refit_growth": 0.0}, seed=0)
    tau = float(np.quantile(latency, 0.9))
    method.start_job(job_info(cls, latency, features.shape[1], tau))
    fin, run = np.arange(60), np.arange(60, 150)

    def checkpoint(running_features, index):
        return Checkpoint(
            time=200.0,
            index=index,
            first_prediction=index == 0,
            finished_tasks=fin,
            finished_features=features[fin],
            finished_latency=latency[fin],
            running_tasks=run,
            running_features=running_features,
            running_elapsed=np.full(len(run), 90.0),
        )

    method.predict(checkpoint(features[run], 0))
    moved = features[run].copy()
    moved[::2] += np.random.default_rng(0).normal(scale=2.0, size=moved[::2].shape)
    flags = method.predict(checkpoint(moved, 1))
    state = method._state
    direct = state.detector.predict(state.scaler.transform(moved)[:, state.columns]) == 1
    np.testing.assert_array_equal(flags, direct)
    assert method.n_fits == 1


def test_methods_are_deterministic_given_their_seed():
    features, latency, start = structured_job(n=120, seed=10)
    for name in ("IFOREST", "PU-BG", "Grabit", "CBLOF"):
        first, _ = replay(get_method(name)({}, seed=5), features, latency, start, n_checkpoints=4)
        second, _ = replay(get_method(name)({}, seed=5), features, latency, start, n_checkpoints=4)
        np.testing.assert_array_equal(first, second)


# ---------------------------------------------------------------------------------------------
# helpers, tested directly


def test_standardizer_guards_constant_and_missing_columns():
    finished = np.array([[1.0, 5.0, np.nan], [3.0, 5.0, np.nan]])
    running = np.array([[5.0, 5.0, np.nan]])
    scaler = fit_standardizer(finished, running)
    np.testing.assert_allclose(scaler.mean[:2], [3.0, 5.0])
    assert scaler.varying.tolist() == [True, False, False]
    z = scaler.transform(np.vstack([finished, running]))
    assert np.all(np.isfinite(z))
    np.testing.assert_allclose(z[:, 0], np.array([-2.0, 0.0, 2.0]) / np.sqrt(8 / 3))
    np.testing.assert_allclose(z[:, 1:], 0.0)
    assert varying_columns(z).tolist() == [True, False, False]


def test_refit_schedule():
    fitted = np.arange(10)
    assert needs_refit(None, None, fitted, 0.5)
    assert not needs_refit(10, fitted, fitted[::-1], 0.0)  # same set, any order
    assert needs_refit(10, fitted, np.arange(11), 0.0)
    assert not needs_refit(10, fitted, np.arange(14), 0.5)
    assert needs_refit(10, fitted, np.arange(15), 0.5)


def test_job_seed_mixes_all_keys():
    assert job_seed(1, 2) == job_seed(1, 2)
    assert len({job_seed(1, 2), job_seed(2, 1), job_seed(1, 2, 3), job_seed(1, 3)}) == 4


def test_cblof_attempts_end_with_a_setting_that_always_splits():
    attempts = cblof_attempts(8, 0.9, 5.0, n_distinct=30)
    assert attempts[0] == (8, 0.9, 5.0)
    assert attempts[-1] == (2, 0.5, 1.5)  # PyOD rejects beta = 1
    assert cblof_attempts(8, 0.9, 5.0, n_distinct=1) == []
    assert all(k <= 3 for k, _, _ in cblof_attempts(8, 0.9, 5.0, n_distinct=3))


def _censored_sample(seed=0, n=400):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, 2))
    X = np.hstack([np.ones((n, 1)), Z])
    beta, sigma = np.array([1.0, 0.4, -0.2]), 0.3
    latent = X @ beta + sigma * rng.normal(size=n)
    cut = rng.uniform(0.5, 1.8, n)
    censored = latent > cut
    return X, np.where(censored, cut, latent), censored, beta, sigma


def test_tobit_gradient_is_exact():
    X, y, censored, beta, sigma = _censored_sample()
    params = np.r_[beta * 0.7, np.log(sigma * 1.3)]
    err = check_grad(
        lambda p: tobit_negloglik(p, X, y, censored, 0.5)[0],
        lambda p: tobit_negloglik(p, X, y, censored, 0.5)[1],
        params,
    )
    assert err < 1e-4 * np.linalg.norm(tobit_negloglik(params, X, y, censored, 0.5)[1]) + 1e-5


def test_tobit_recovers_parameters_despite_censoring():
    X, y, censored, beta, sigma = _censored_sample(n=3000)
    assert censored.mean() > 0.2
    beta_hat, sigma_hat = fit_tobit(X, y, censored, l2=0.0)
    np.testing.assert_allclose(beta_hat, beta, atol=0.05)
    assert abs(sigma_hat - sigma) < 0.03
    naive = np.linalg.lstsq(X, y, rcond=None)[0]  # ignoring censoring is biased
    assert abs(naive[0] - beta[0]) > 2 * abs(beta_hat[0] - beta[0])


def test_grabit_gradient_and_hessian_match_the_likelihood():
    X, y, censored, beta, sigma = _censored_sample(n=50)
    f = X @ beta + 0.1

    def nll(pred):
        return tobit_negloglik(np.r_[1.0, np.log(sigma)], pred.reshape(-1, 1), y, censored)[0]

    grad, hess = tobit_grad_hess(f, y, censored, sigma)
    np.testing.assert_allclose(grad, approx_fprime(f, nll, 1e-6), rtol=1e-3, atol=1e-4)
    eps = 1e-5
    for i in (0, int(np.flatnonzero(censored)[0])):
        up, down = f.copy(), f.copy()
        up[i] += eps
        down[i] -= eps
        g_up = tobit_grad_hess(up, y, censored, sigma)[0][i]
        g_down = tobit_grad_hess(down, y, censored, sigma)[0][i]
        assert hess[i] == pytest.approx((g_up - g_down) / (2 * eps), rel=1e-3)
    assert np.all(hess > 0)


def test_gaussian_decision_rules():
    mu = np.array([0.5, 1.2, 0.5])
    elapsed = np.array([0.2, 0.2, 1.5])
    assert gaussian_flags(mu, 0.2, elapsed, 1.0, "latent_mean").tolist() == [False, True, False]
    # the third task is already past the threshold: it is a straggler whatever mu says
    conditional = gaussian_flags(mu, 0.2, elapsed, 1.0, "conditional_median")
    assert conditional.tolist() == [False, True, True]
    with pytest.raises(ValueError):
        gaussian_flags(mu, 0.2, elapsed, 1.0, "mode")


def test_targets_and_censoring_points():
    cp = Checkpoint(
        time=50.0,
        index=0,
        first_prediction=True,
        finished_tasks=np.array([0, 1]),
        finished_features=np.zeros((2, 1)),
        finished_latency=np.array([10.0, 30.0]),
        running_tasks=np.array([2, 3]),
        running_features=np.zeros((2, 1)),
        running_elapsed=np.array([0.0, 45.0]),
    )
    np.testing.assert_allclose(censoring_points(cp, "elapsed"), [0.0, 45.0])
    np.testing.assert_allclose(censoring_points(cp, "max_finished"), [30.0, 30.0])
    np.testing.assert_allclose(to_target(np.array([20.0, 40.0]), 40.0, "latency"), [0.5, 1.0])
    assert np.all(np.isfinite(to_target(np.array([0.0, 40.0]), 40.0, "log_latency")))


def test_weibull_tail_recovers_the_shape_and_extends_the_hazard():
    t = np.linspace(1.0, 10.0, 20)
    assert weibull_tail_shape(t, 0.01 * t**1.7) == pytest.approx(1.7)
    assert weibull_tail_shape(np.array([3.0]), np.array([0.1])) == 1.0
    h = BaselineHazard(
        times=np.array([1.0, 2.0, 4.0]),
        cumulative=np.array([0.1, 0.3, 0.6]),
        last_event=2.0,
        tail_shape=2.0,
    )
    np.testing.assert_allclose(h(np.array([0.5, 1.5, 2.0, 4.0])), [0.0, 0.1, 0.3, 0.3 * 4])
    flat = BaselineHazard(times=h.times, cumulative=h.cumulative, last_event=2.0, tail_shape=None)
    assert flat(np.array([100.0]))[0] == 0.6


def test_wrangler_split_and_oversampling():
    labels = np.r_[np.ones(30, bool), np.zeros(270, bool)]
    training = stratified_training_split(labels, 2 / 3, seed=1)
    assert training[labels].sum() == 20 and training[~labels].sum() == 180
    rows = oversample_minority(labels, seed=2)
    assert labels[rows].sum() == (~labels[rows]).sum() == 270
    assert set(rows) == set(range(300))


def test_platt_svc_gives_probabilities_even_with_a_single_row_class():
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(size=(30, 3)), rng.normal(size=(1, 3)) + 4])
    y = np.r_[np.zeros(30, int), 1]
    proba = PlattSVC(random_state=0).fit(X, y).predict_proba(X)
    assert proba.shape == (31, 2) and np.all((proba >= 0) & (proba <= 1))
    X2 = np.vstack([rng.normal(size=(40, 3)), rng.normal(size=(40, 3)) + 3])
    y2 = np.r_[np.zeros(40, int), np.ones(40, int)]
    p2 = PlattSVC(random_state=0).fit(X2, y2).predict_proba(X2)[:, 1]
    assert p2[40:].mean() > 0.8 and p2[:40].mean() < 0.2


def test_wrangler_through_the_replay_detects_stragglers():
    """End to end through the online replay: its training tasks stay visible, are not scored,
    and it beats a random flagger at its own flag rate on the scored tasks."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from jobfactory import LAST, make_job

    from stragglers.replay.core import ReplaySettings
    from stragglers.replay.runner import run_method_on_jobs

    jobs = [make_job(240, seed=s) for s in range(3)]
    tasks, rows = run_method_on_jobs(
        iter(jobs), get_method("Wrangler"), {}, ReplaySettings(), LAST, 7, "d"
    )
    assert (rows["status"] == "ok").all(), rows["reason"].tolist()
    scored = tasks[tasks["evaluated"]]
    assert 0 < len(scored) < len(tasks)  # about a third scored
    flagged, truth = scored["flagged"].to_numpy(), scored["is_straggler"].to_numpy()
    precision = (flagged & truth).sum() / max(flagged.sum(), 1)
    assert truth.any() and precision > 2 * truth.mean()
