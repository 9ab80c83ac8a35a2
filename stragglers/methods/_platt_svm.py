"""The PU methods' classifiers without scikit-learn's and pulearn's per-call overhead.

PU-BG fits 10 bagged Platt-scaled SVMs per refit, each of them 6 SVMs and a logistic sigmoid;
profiles found most of the CPU in input validation, parameter validation, cloning and
splitter set-up around libsvm, not in libsvm. The functions here make the same library calls
on the same arrays in the same order (libsvm's fit and decision function, scikit-learn's
logistic regression path and stratified folds, pulearn's bagging draws), skipping the checks
on arrays that are already validated, so every value and every random draw is the library's.
Pinned by tests/test_platt_svm.py against scikit-learn and pulearn (requirements.lock).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

# pulearn's and scikit-learn's bound on drawn seeds (np.iinfo(np.int32).max)
MAX_SEED = np.iinfo(np.int32).max


@cache
def _svc_settings() -> dict:
    """libsvm's arguments that SVC(kernel="rbf") passes besides C and gamma, read from a
    default SVC so they follow the pinned scikit-learn."""
    from sklearn.svm import SVC

    svc = SVC(kernel="rbf")
    return {
        "degree": svc.degree,
        "coef0": svc.coef0,
        "tol": svc.tol,
        "cache_size": svc.cache_size,
        "shrinking": svc.shrinking,
        "max_iter": svc.max_iter,
        "nu": svc.nu,
        "epsilon": svc.epsilon,
    }


@dataclass(frozen=True)
class RbfSVC:
    """A fitted C-SVC with RBF kernel: libsvm's model as SVC keeps it."""

    support: np.ndarray
    support_vectors: np.ndarray
    n_support: np.ndarray
    dual_coef: np.ndarray  # libsvm's sign (SVC's `_dual_coef_`)
    intercept: np.ndarray  # libsvm's sign (SVC's `_intercept_`)
    prob_a: np.ndarray
    prob_b: np.ndarray
    gamma: float

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """SVC.decision_function for two classes (X float64, finite)."""
        settings = _svc_settings()
        decision = libsvm_decision(
            X,
            self,
            svm_type=0,  # c_svc
            degree=settings["degree"],
            cache_size=settings["cache_size"],
            coef0=settings["coef0"],
        )
        return -decision.ravel()  # SVC's binary sign flip


def libsvm_decision(
    X: np.ndarray, model: RbfSVC | OneClassRbfSVM, svm_type: int, degree, cache_size, coef0
) -> np.ndarray:
    """libsvm's decision values of an RBF model, as BaseLibSVM._dense_decision_function
    computes them (X float64, finite; C order made here)."""
    from sklearn.svm import _libsvm

    return _libsvm.decision_function(
        np.ascontiguousarray(X, dtype=np.float64),
        model.support,
        model.support_vectors,
        model.n_support,
        model.dual_coef,
        model.intercept,
        model.prob_a,
        model.prob_b,
        svm_type=svm_type,
        kernel="rbf",
        degree=degree,
        cache_size=cache_size,
        coef0=coef0,
        gamma=model.gamma,
    )


def libsvm_rbf_fit(
    X: np.ndarray, y: np.ndarray, svm_type: int, kernel: str = "rbf", **settings
) -> tuple:
    """libsvm's fit of an RBF model as BaseLibSVM.fit and _dense_fit call it (X finite
    float64 in C order, y float64), its seed drawn from numpy's global random state as
    with random_state=None, and the finiteness check BaseLibSVM.fit makes after it.
    `settings`: libsvm's other arguments (C, nu, gamma, tol, ...). With kernel
    "precomputed", X is the model's kernel values of the training rows (no support vectors
    are returned)."""
    from sklearn.svm import _libsvm

    seed = np.random.mtrand._rand.randint(np.iinfo("i").max)
    _libsvm.set_verbosity_wrap(0)  # libsvm's global switch; verbose=False sets it so
    fitted = _libsvm.fit(
        X,
        y,
        svm_type=svm_type,
        sample_weight=np.asarray([], dtype=np.float64),
        kernel=kernel,
        probability=False,
        random_seed=seed,
        **settings,
    )
    support, vectors, n_support, dual_coef, intercept, prob_a, prob_b, _status, _ = fitted
    if not (np.isfinite(intercept).all() and np.isfinite(dual_coef).all()):
        raise ValueError("The dual coefficients or intercepts are not finite.")
    return support, vectors, n_support, dual_coef, intercept, prob_a, prob_b


@dataclass(frozen=True)
class OneClassRbfSVM:
    """A fitted one-class SVM with RBF kernel: libsvm's model as OneClassSVM keeps it."""

    support: np.ndarray
    support_vectors: np.ndarray
    n_support: np.ndarray
    dual_coef: np.ndarray
    intercept: np.ndarray
    prob_a: np.ndarray
    prob_b: np.ndarray
    gamma: float
    degree: int
    cache_size: float
    coef0: float

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """OneClassSVM.decision_function (X float64, finite)."""
        return libsvm_decision(
            X,
            self,
            svm_type=2,  # one_class
            degree=self.degree,
            cache_size=self.cache_size,
            coef0=self.coef0,
        ).ravel()


def rbf_gamma(X: np.ndarray, gamma: str | float) -> float:
    """BaseLibSVM.fit's kernel coefficient for dense X: "scale", "auto" or a number."""
    if gamma == "scale":
        variance = X.var()
        return 1.0 / (X.shape[1] * variance) if variance != 0 else 1.0
    if gamma == "auto":
        return 1.0 / X.shape[1]
    return gamma


def fit_one_class_rbf(
    X: np.ndarray,
    nu: float,
    gamma: str | float,
    tol: float,
    shrinking: bool,
    cache_size: float,
    max_iter: int,
    degree: int,
    coef0: float,
) -> OneClassRbfSVM:
    """OneClassSVM(kernel="rbf", ...).fit(X) for X finite float64 in C order: the same libsvm
    call (C and epsilon 0, no class weights, every row's target 1) and the same draw of
    libsvm's seed from numpy's global random state."""
    gamma_value = rbf_gamma(X, gamma)
    fitted = libsvm_rbf_fit(
        X,
        np.ones(X.shape[0], dtype=np.float64),
        svm_type=2,  # one_class
        class_weight=np.empty(0),
        C=0.0,
        nu=nu,
        degree=degree,
        shrinking=shrinking,
        tol=tol,
        cache_size=cache_size,
        coef0=coef0,
        gamma=gamma_value,
        epsilon=0.0,
        max_iter=max_iter,
    )
    return OneClassRbfSVM(
        *fitted, gamma=gamma_value, degree=degree, cache_size=cache_size, coef0=coef0
    )


def fit_rbf_svc(X: np.ndarray, y: np.ndarray, C: float, gamma: str | float = "scale") -> RbfSVC:
    """SVC(C=C, gamma=gamma, kernel="rbf").fit(X, y) for two classes, X finite float64.

    Draws libsvm's seed from numpy's global random state, as SVC does with random_state=None,
    so every later draw from it is unchanged."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2 or not np.isfinite(X).all():
        raise ValueError("fit_rbf_svc needs a finite two-dimensional X")
    classes, encoded = np.unique(np.asarray(y).reshape(-1), return_inverse=True)
    if len(classes) != 2:
        raise ValueError(f"fit_rbf_svc needs two classes, got {len(classes)}")
    gamma_value = rbf_gamma(X, gamma)
    settings = _svc_settings()
    fitted = libsvm_rbf_fit(
        X,
        np.asarray(encoded, dtype=np.float64, order="C"),
        svm_type=0,  # c_svc
        class_weight=np.ones(2, dtype=np.float64),  # class_weight=None
        C=C,
        nu=settings["nu"],
        degree=settings["degree"],
        shrinking=settings["shrinking"],
        tol=settings["tol"],
        cache_size=settings["cache_size"],
        coef0=settings["coef0"],
        gamma=gamma_value,
        epsilon=settings["epsilon"],
        max_iter=settings["max_iter"],
    )
    return RbfSVC(*fitted, gamma_value)


def stratified_test_folds(y: np.ndarray, n_splits: int, random_state) -> np.ndarray:
    """Fold of each row under StratifiedKFold(n_splits, shuffle=True, random_state)
    (its `_make_test_folds`, for labels every class of which has n_splits rows or more)."""
    from sklearn.utils import check_random_state

    rng = check_random_state(random_state)
    y = np.asarray(y).reshape(-1)
    _, first_index, inverse = np.unique(y, return_index=True, return_inverse=True)
    # classes numbered by first appearance, as scikit-learn does
    _, class_perm = np.unique(first_index, return_inverse=True)
    encoded = class_perm[inverse]
    n_classes = len(first_index)
    counts = np.bincount(encoded)
    if np.all(n_splits > counts) or n_splits > counts.min():
        raise ValueError("stratified_test_folds needs n_splits rows of every class")
    ordered = np.sort(encoded)
    allocation = np.asarray(
        [np.bincount(ordered[i::n_splits], minlength=n_classes) for i in range(n_splits)]
    )
    test_folds = np.empty(len(y), dtype="i")
    for k in range(n_classes):
        folds_for_class = np.arange(n_splits).repeat(allocation[:, k])
        rng.shuffle(folds_for_class)
        test_folds[encoded == k] = folds_for_class
    return test_folds


@dataclass(frozen=True)
class Sigmoid:
    """A fitted one-feature logistic regression (LogisticRegression's coef_, intercept_)."""

    coef: np.ndarray  # (1, 1)
    intercept: np.ndarray  # (1,)

    def predict_proba(self, decision: np.ndarray) -> np.ndarray:
        """LogisticRegression.predict_proba on decision.reshape(-1, 1)."""
        from scipy.special import expit

        prob = (decision.reshape(-1, 1) @ self.coef.T + self.intercept).reshape(-1)
        prob = expit(prob, out=prob)
        return np.stack([1 - prob, prob], axis=1)


@cache
def _logistic_settings() -> tuple[dict, dict]:
    """LogisticRegression's defaults and the options its lbfgs path gives scipy's L-BFGS-B."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.utils.fixes import _get_additional_lbfgs_options_dict

    params = LogisticRegression().get_params()
    if params["solver"] != "lbfgs" or params["l1_ratio"] != 0.0 or not params["fit_intercept"]:
        raise RuntimeError(f"LogisticRegression's defaults changed: {params}")
    options = {
        "maxiter": params["max_iter"],
        "maxls": 50,
        "gtol": params["tol"],
        "ftol": 64 * np.finfo(float).eps,
        **_get_additional_lbfgs_options_dict("iprint", -1),  # verbose=0
    }
    return params, options


def fit_sigmoid(decision: np.ndarray, positive: np.ndarray, C: float) -> Sigmoid:
    """LogisticRegression(C=C).fit(decision.reshape(-1, 1), positive.astype(int)) with both
    classes present: scikit-learn's binary lbfgs path (`_logistic_regression_path`: the
    same loss, starting point, penalty and scipy call), without its validation and set-up."""
    from scipy import optimize
    from sklearn._loss.loss import HalfBinomialLoss
    from sklearn.linear_model._linear_loss import LinearModelLoss

    _, options = _logistic_settings()
    X = np.ascontiguousarray(np.asarray(decision, dtype=np.float64).reshape(-1, 1))
    y = np.asarray(positive).astype(int)
    classes = np.unique(y)
    if len(classes) != 2 or not np.isfinite(X).all():
        raise ValueError("fit_sigmoid needs finite decisions and two classes")
    target = np.ones(y.shape, dtype=X.dtype)
    target[y != classes[1]] = 0.0
    loss = LinearModelLoss(base_loss=HalfBinomialLoss(), fit_intercept=True)
    result = optimize.minimize(
        loss.loss_gradient,
        np.zeros(X.shape[1] + 1, dtype=np.float64),
        method="L-BFGS-B",
        jac=True,
        args=(X, target, None, 1.0 / (C * X.shape[0]), 1),  # l2 strength, one thread
        options=options,
        callback=None,
    )
    coef = np.asarray(result.x.copy(order="K"), dtype=X.dtype)
    return Sigmoid(coef=coef[:-1][None, :], intercept=coef[-1:])


def platt_decision_values(
    X: np.ndarray,
    y: np.ndarray,
    full: RbfSVC,
    C: float,
    gamma: str | float,
    cv: int,
    random_state,
) -> np.ndarray:
    """Out-of-fold decision values of PlattSVC's sigmoid fit (see `_pu.PlattSVC`)."""
    positive = y == np.unique(y)[1]
    n_folds = min(int(cv), int(positive.sum()), int((~positive).sum()))
    if n_folds < 2:
        return full.decision_function(X)
    decision = np.empty(len(y))
    test_folds = stratified_test_folds(y, n_folds, random_state)
    rows = np.arange(len(y))
    for fold in range(n_folds):
        test_mask = test_folds == fold
        train_idx, test_idx = rows[~test_mask], rows[test_mask]
        if np.unique(y[train_idx]).size < 2:
            decision[test_idx] = full.decision_function(X[test_idx])
            continue
        fold_svc = fit_rbf_svc(X[train_idx], y[train_idx], C, gamma)
        decision[test_idx] = fold_svc.decision_function(X[test_idx])
    return decision


@dataclass
class PUBaggingFit:
    """pulearn's BaggingPuClassifier, fitted: its estimators and their feature columns."""

    estimators: list
    features: list

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """BaggingPuClassifier.predict_proba (n_jobs=1)."""
        X = np.asarray(X, dtype=np.float64)
        proba = np.zeros((X.shape[0], 2))
        for estimator, features in zip(self.estimators, self.features):
            proba += estimator.predict_proba(X[:, features])
        return proba / len(self.estimators)


def fit_pu_bagging(
    X: np.ndarray,
    s: np.ndarray,
    make_estimator,
    n_estimators: int,
    max_samples: float | int,
    random_state: int | None,
) -> PUBaggingFit:
    """BaggingPuClassifier(estimator, n_estimators, max_samples, oob_score=False, n_jobs=1,
    random_state).fit(X, s) for labels s in {0, 1} with both present: the same draws and
    fits, without cloning and validating an estimator per bag.

    `make_estimator(random_state)` builds the unfitted estimator with that random state (the
    one random_state parameter of the estimator, as pulearn's clone sets it); the estimator
    takes no sample weights."""
    from sklearn.utils import check_random_state
    from sklearn.utils.random import sample_without_replacement

    X = np.asarray(X)
    if X.ndim != 2 or not np.isfinite(X).all():
        raise ValueError("fit_pu_bagging needs a finite two-dimensional X")
    y = (np.asarray(s).reshape(-1) == 1).astype(np.int8)  # pulearn's normalised labels
    n_features = X.shape[1]
    unlabeled = np.flatnonzero(y == 0)
    labelled = np.flatnonzero(y == 1)
    if len(unlabeled) == 0 or len(labelled) == 0:
        raise ValueError("fit_pu_bagging needs labelled and unlabeled rows")
    if not isinstance(max_samples, (int, np.integer)):
        max_samples = int(max_samples * len(unlabeled))
    if not 0 < max_samples <= len(unlabeled):
        raise ValueError("max_samples must be positive and at most the unlabeled rows")
    seeds = check_random_state(random_state).randint(MAX_SEED, size=n_estimators)
    estimators, features_used = [], []
    for seed in seeds:
        rng = np.random.RandomState(seed)
        estimator = make_estimator(rng.randint(MAX_SEED))
        features = sample_without_replacement(n_features, n_features, random_state=rng)
        drawn = rng.randint(0, len(unlabeled), max_samples)
        rows = np.r_[unlabeled[drawn], labelled]
        estimator.fit(X[rows][:, features], y[rows])
        estimators.append(estimator)
        features_used.append(features)
    return PUBaggingFit(estimators=estimators, features=features_used)
