"""The PU methods' classifiers (stragglers/methods/_platt_svm.py) give scikit-learn's and
pulearn's values bit for bit: libsvm's RBF SVC, StratifiedKFold's folds, LogisticRegression's
sigmoid, PlattSVC as composed of those three, and BaggingPuClassifier's bags; numpy's global
random state is left where SVC leaves it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

from stragglers.methods._platt_svm import (
    fit_pu_bagging,
    fit_rbf_svc,
    fit_sigmoid,
    stratified_test_folds,
)
from stragglers.methods._pu import PlattSVC
from stragglers.methods.pu_bg import PUBagging
from stragglers.methods.pu_en import PUElkanNoto


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _samples(count: int, seed: int):
    """(X, y) as the PU methods fit them, and the edge cases: ties, constant columns, a
    single row of a class, two rows, wide scales, duplicated rows."""
    rng = np.random.default_rng(seed)
    for trial in range(count):
        n = int(rng.integers(2, 70))
        d = int(rng.integers(1, 5))
        X = rng.normal(size=(n, d)) * 10 ** rng.uniform(-3, 3, size=d)
        y = (rng.random(n) < rng.uniform(0.1, 0.9)).astype(int)
        y[0], y[-1] = 1, 0
        shape = trial % 6
        if shape == 1:
            X = np.round(X)
        elif shape == 2:
            X[:, 0] = 3.0  # a constant column
        elif shape == 3:
            y[:] = 0
            y[int(rng.integers(n))] = 1  # a class of one row
        elif shape == 4:
            X = X[np.arange(n) % max(1, n // 3)]  # duplicated rows
        elif shape == 5:
            X = np.zeros((n, d))  # no spread at all: gamma falls back to 1
        yield X, y


def _reference_platt(X, y, C=1.0, cv=5, random_state=None):
    """PlattSVC as written with scikit-learn's estimators: the code `_platt_svm` replaces."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y).astype(int)
    classes = np.unique(y)
    positive = y == classes[1]
    svc = SVC(C=C, gamma="scale", kernel="rbf").fit(X, y)
    n_folds = min(int(cv), int(positive.sum()), int((~positive).sum()))
    if n_folds >= 2:
        decision = np.empty(len(y))
        folds = StratifiedKFold(n_folds, shuffle=True, random_state=random_state)
        for train_idx, test_idx in folds.split(X, y):
            if np.unique(y[train_idx]).size < 2:
                decision[test_idx] = svc.decision_function(X[test_idx])
                continue
            fold_svc = SVC(C=C, gamma="scale", kernel="rbf").fit(X[train_idx], y[train_idx])
            decision[test_idx] = fold_svc.decision_function(X[test_idx])
    else:
        decision = svc.decision_function(X)
    sigmoid = LogisticRegression(C=1e6).fit(decision.reshape(-1, 1), positive.astype(int))
    return svc, sigmoid


def test_fit_rbf_svc_equals_svc_and_draws_the_same_global_seed():
    for trial, (X, y) in enumerate(_samples(120, 1)):
        C = [1.0, 0.3, 10.0][trial % 3]
        np.random.seed(trial)
        expected = SVC(C=C, gamma="scale", kernel="rbf").fit(X, y)
        after_expected = np.random.random()
        np.random.seed(trial)
        ours = fit_rbf_svc(X, y, C)
        assert np.random.random() == after_expected
        assert _same(ours.support, expected.support_)
        assert _same(ours.support_vectors, expected.support_vectors_)
        assert _same(ours.dual_coef, expected._dual_coef_)
        assert _same(ours.intercept, expected._intercept_)
        assert ours.gamma == expected._gamma
        probe = np.vstack([X, X[::-1] + 0.5])
        assert _same(ours.decision_function(probe), expected.decision_function(probe))


def test_fit_rbf_svc_gamma_settings_and_rejections():
    X, y = np.arange(12.0).reshape(6, 2), np.array([0, 1, 0, 1, 0, 1])
    for gamma in ("auto", 0.7):
        ours = fit_rbf_svc(X, y, 1.0, gamma)
        expected = SVC(C=1.0, gamma=gamma, kernel="rbf").fit(X, y)
        assert _same(ours.decision_function(X), expected.decision_function(X))
    with pytest.raises(ValueError):
        fit_rbf_svc(X, np.zeros(6, dtype=int), 1.0)
    with pytest.raises(ValueError):
        fit_rbf_svc(np.where(X > 5, np.nan, X), y, 1.0)


def test_stratified_test_folds_equal_stratified_kfold():
    rng = np.random.default_rng(3)
    for trial in range(400):
        n = int(rng.integers(4, 90))
        labels = rng.choice([0, 1, 2] if trial % 4 == 0 else [0, 1], size=n)
        if trial % 5 == 1:
            labels = np.sort(labels)[::-1].copy()  # classes numbered by first appearance
        counts = np.bincount(labels)
        smallest = counts[counts > 0].min()
        if smallest < 2:
            continue
        n_splits = int(rng.integers(2, min(smallest, 6) + 1))
        seed = int(rng.integers(2**31 - 1))
        folds = StratifiedKFold(n_splits, shuffle=True, random_state=seed)
        expected = folds._make_test_folds(np.zeros((n, 1)), labels)
        assert _same(stratified_test_folds(labels, n_splits, seed), expected)
        test_sets = [test for _, test in folds.split(np.zeros((n, 1)), labels)]
        ours = stratified_test_folds(labels, n_splits, seed)
        assert all(_same(np.flatnonzero(ours == k), test_sets[k]) for k in range(n_splits))


def test_fit_sigmoid_equals_logistic_regression():
    rng = np.random.default_rng(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for trial in range(200):
            n = int(rng.integers(2, 80))
            decision = rng.normal(size=n) * [0.01, 1.0, 100.0][trial % 3]
            if trial % 4 == 1:
                decision = np.round(decision)  # ties
            positive = rng.random(n) < rng.uniform(0.05, 0.95)
            positive[0], positive[-1] = True, False
            if trial % 6 == 5:
                positive = decision > np.median(decision)  # separable: large coefficients
                positive[0], positive[-1] = True, False
            expected = LogisticRegression(C=1e6).fit(decision.reshape(-1, 1), positive.astype(int))
            ours = fit_sigmoid(decision, positive, C=1e6)
            assert _same(ours.coef, expected.coef_)
            assert _same(ours.intercept, expected.intercept_)
            probe = np.r_[decision, decision * 3 - 1]
            assert _same(ours.predict_proba(probe), expected.predict_proba(probe.reshape(-1, 1)))


def test_platt_svc_equals_its_scikit_learn_composition():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for trial, (X, y) in enumerate(_samples(60, 7)):
            random_state = None if trial % 5 == 0 else trial
            np.random.seed(trial)
            svc, sigmoid = _reference_platt(X, y, random_state=random_state)
            expected = sigmoid.predict_proba(svc.decision_function(X).reshape(-1, 1))
            after_expected = np.random.random()
            np.random.seed(trial)
            ours = PlattSVC(random_state=random_state).fit(X, y)
            assert np.random.random() == after_expected
            assert _same(ours.predict_proba(X), expected)


@pytest.mark.parametrize("max_samples", [1.0, 0.5, "balanced"])
def test_pu_bagging_equals_pulearn(max_samples):
    method = PUBagging({"max_samples": max_samples, "n_estimators": 4})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for trial, (X, s) in enumerate(_samples(24, 11)):
            if min(s.sum(), len(s) - s.sum()) < 2:
                continue
            n_labelled = int(s.sum())
            np.random.seed(trial)
            expected = method.make_classifier(trial, n_labelled, len(s) - n_labelled).fit(X, s)
            after_expected = np.random.random()
            np.random.seed(trial)
            ours = method.fit_classifier(X, s, trial)
            assert np.random.random() == after_expected
            probe = np.vstack([X, X * 0.5 + 1.0])
            assert _same(ours.predict_proba(probe), expected.predict_proba(probe))


def test_pu_bagging_rejects_what_pulearn_rejects():
    X = np.arange(20.0).reshape(10, 2)
    with pytest.raises(ValueError):
        fit_pu_bagging(X, np.ones(10), PlattSVC, 2, 1.0, 0)
    with pytest.raises(ValueError):
        fit_pu_bagging(X, np.r_[np.ones(5), np.zeros(5)], PlattSVC, 2, 6, 0)


def test_pu_elkan_noto_keeps_its_values():
    """PU-EN fits pulearn's ElkanotoPuClassifier around PlattSVC: the same probabilities as
    around the scikit-learn composition."""
    method = PUElkanNoto()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for trial, (X, s) in enumerate(_samples(20, 13)):
            if min(s.sum(), len(s) - s.sum()) < 2:
                continue
            ours = method.fit_classifier(X, s, trial)
            if ours is None:
                continue
            estimator = ours.estimator
            # refit the same held-out split with the composition the class replaces
            held = np.arange(len(s))
            np.random.RandomState(ours.random_state).shuffle(held)
            kept = np.delete(np.arange(len(s)), held[: int(np.ceil(len(s) * 0.1))])
            svc, sigmoid = _reference_platt(
                X[kept], s[kept].astype(np.int8), random_state=estimator.random_state
            )
            expected = sigmoid.predict_proba(svc.decision_function(X).reshape(-1, 1))
            assert _same(estimator.predict_proba(X), expected)
