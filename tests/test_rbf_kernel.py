"""XGBOD's one-class SVMs scored from shared kernel values (stragglers/methods/_rbf_kernel.py)
give libsvm's decision values bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from stragglers.methods._platt_svm import fit_one_class_rbf
from stragglers.methods._rbf_kernel import RbfKernelRows

NU_RANGE = (0.01, 0.1, 0.5, 0.9, 0.99)  # from PyOD's default XGBOD list


def _rows(rng: np.random.Generator, trial: int, n: int, d: int) -> np.ndarray:
    """Standardised-looking rows, by trial rounded (ties), with duplicated rows, a constant
    column, or at wide scales."""
    X = rng.normal(size=(n, d))
    shape = trial % 5
    if shape == 1:
        X = np.round(X)
    elif shape == 2:
        X[n // 2 :] = X[: n - n // 2]
    elif shape == 3:
        X[:, 0] = 0.0
    elif shape == 4:
        X = X * 10.0 ** rng.uniform(-4, 4, size=d)
    return X


@pytest.mark.parametrize("gamma", ["scale", "auto", 0.3])
def test_shared_kernel_decisions_equal_libsvms(gamma):
    """Every model of one set of rows (nu from 0.01 to 0.99), asked about its training rows
    and new batches (rows of one to 40 features: BLAS's dot products of every length
    class), from one shared RbfKernelRows: libsvm's values."""
    rng = np.random.default_rng(len(str(gamma)))
    for trial in range(60):
        n = 1 + trial % 4 if trial % 6 == 0 else int(rng.integers(2, 70))
        d = int(rng.integers(1, 41))
        X = np.ascontiguousarray(_rows(rng, trial, n, d))
        batches = (X, _rows(rng, trial + 1, int(rng.integers(1, 40)), d), X[::-1])
        shared = RbfKernelRows()
        for nu in NU_RANGE:
            model = fit_one_class_rbf(X, nu, gamma, 1e-3, True, 200.0, -1, 3, 0.0)
            for batch in batches:
                ours = shared.decision_function(batch, X, model)
                assert ours is not None
                expected = model.decision_function(batch)
                assert ours.tobytes() == expected.tobytes(), (trial, nu)


def test_shared_kernel_leaves_other_models_to_libsvm():
    """A model whose support vectors are not rows of the given training set: None (libsvm
    scores it); the values of one set of rows are not reused for another."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 4))
    model = fit_one_class_rbf(X, 0.5, "scale", 1e-3, True, 200.0, -1, 3, 0.0)
    shared = RbfKernelRows()
    assert shared.decision_function(X, X + 1.0, model) is None
    other = rng.normal(size=(30, 4))
    other_model = fit_one_class_rbf(other, 0.5, "scale", 1e-3, True, 200.0, -1, 3, 0.0)
    batch = rng.normal(size=(9, 4))
    first = shared.decision_function(batch, X, model)
    second = shared.decision_function(batch, other, other_model)
    assert first.tobytes() == model.decision_function(batch).tobytes()
    assert second.tobytes() == other_model.decision_function(batch).tobytes()


def _model_bytes(model) -> list:
    return [
        (np.asarray(value).dtype.str, np.asarray(value).shape, np.asarray(value).tobytes())
        for value in vars(model).values()
    ]


@pytest.mark.parametrize("gamma", ["scale", "auto", 0.3])
def test_fits_on_shared_training_values_equal_libsvms_rbf_fits(gamma):
    """libsvm's one-class fit on the shared training kernel values (a precomputed kernel)
    makes fit_one_class_rbf's model, field for field, drawing the same seed from numpy's
    global random state: rows of one to 40 features, ties, duplicates, a constant column,
    one row, every nu of PyOD's list; and libsvm's RBF fit beyond the kept values' bound."""
    rng = np.random.default_rng(7 + len(str(gamma)))
    for trial in range(40):
        n = 1 + trial % 3 if trial % 8 == 0 else int(rng.integers(2, 340))
        X = np.ascontiguousarray(_rows(rng, trial, n, int(rng.integers(1, 41))))
        shared = RbfKernelRows()
        for nu in NU_RANGE:
            np.random.seed(trial)
            expected = fit_one_class_rbf(X, nu, gamma, 1e-3, True, 200.0, -1, 3, 0.0)
            after_expected = np.random.randint(2**31 - 1)
            np.random.seed(trial)
            ours = shared.fit_one_class(X, nu, gamma, 1e-3, True, 200.0, -1, 3, 0.0)
            assert np.random.randint(2**31 - 1) == after_expected
            assert _model_bytes(ours) == _model_bytes(expected), (trial, nu)


def test_fits_beyond_the_kept_values_are_libsvms(monkeypatch):
    import stragglers.methods._rbf_kernel as rbf_kernel

    monkeypatch.setattr(rbf_kernel, "MAX_SHARED_VALUES", 99)
    X = np.random.default_rng(2).normal(size=(10, 3))
    np.random.seed(1)
    expected = fit_one_class_rbf(X, 0.5, "scale", 1e-3, True, 200.0, -1, 3, 0.0)
    np.random.seed(1)
    shared = RbfKernelRows()
    ours = shared.fit_one_class(X, 0.5, "scale", 1e-3, True, 200.0, -1, 3, 0.0)
    assert _model_bytes(ours) == _model_bytes(expected) and shared._gram is None
    assert shared.decision_function(X, X, ours) is None  # 100 values: libsvm's scores
