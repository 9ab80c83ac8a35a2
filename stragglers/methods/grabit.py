"""Grabit (Sigrist & Hirnschall, 2019): gradient tree-boosted Tobit model.

The paper used KTBoost's `loss="tobit"`; KTBoost does not import with current scikit-learn,
so this is XGBoost with a custom objective: the gradient and Hessian of the right-censored
Gaussian negative log-likelihood in the boosted prediction f(x) (`_censored.tobit_grad_hess`),
sigma held fixed. As in the paper's code, sigma is the standard deviation of the residuals of
a least-squares linear fit (censored rows at their censoring point) unless given.
Tree settings follow KTBoost's defaults (100 trees, learning rate 0.1, depth 5); the
initial prediction is the mean target.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from stragglers.methods._censored import (
    CENSORING_MODES,
    GAUSSIAN_DECISIONS,
    TARGETS,
    CensoredGaussianMethod,
    tobit_grad_hess,
)
from stragglers.methods.base import Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    import xgboost as xgb

_MIN_SIGMA = 1e-3  # on the target scale (tau = 1)


def residual_sigma(Z: np.ndarray, y: np.ndarray) -> float:
    """Std of least-squares residuals of y on [1, Z] (the paper code's sigma for Grabit)."""
    X = np.hstack([np.ones((len(Z), 1)), Z])
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    return max(float(np.std(y - X @ beta)), _MIN_SIGMA)


class BoostedTobit:
    """XGBoost booster trained on the Tobit objective; predict() gives the latent mean."""

    def __init__(self, booster: xgb.Booster):
        self.booster = booster

    def predict(self, Z: np.ndarray) -> np.ndarray:
        import xgboost as xgb

        Z = np.asarray(Z, dtype=np.float64)
        if Z.shape[1] == 0:
            Z = np.zeros((len(Z), 1))
        return self.booster.predict(xgb.DMatrix(Z), output_margin=True)


def fit_boosted_tobit(
    Z: np.ndarray,
    y: np.ndarray,
    censored: np.ndarray,
    sigma: float,
    n_estimators: int,
    learning_rate: float,
    max_depth: int,
    seed: int,
) -> BoostedTobit:
    import xgboost as xgb

    from stragglers.methods._xgb_training import train_with_objective

    Z = np.asarray(Z, dtype=np.float64)
    if Z.shape[1] == 0:  # no varying feature: the boosted model reduces to a constant
        Z = np.zeros((len(Z), 1))
    dtrain = xgb.DMatrix(Z, label=y)
    s2 = sigma * sigma

    def objective(predt: np.ndarray, data: xgb.DMatrix):
        grad, hess = tobit_grad_hess(predt, y, censored, sigma)
        # scaled by sigma^2: Newton steps g/h are unchanged, and XGBoost's leaf penalty and
        # min_child_weight act as they do for squared error (hessian 1 per observed row)
        return grad * s2, hess * s2

    params = {
        "max_depth": int(max_depth),
        "eta": float(learning_rate),
        "base_score": float(np.mean(y)),
        "min_child_weight": 1e-3,
        "tree_method": "exact",
        "nthread": 1,
        "seed": int(seed),
        "verbosity": 0,
    }
    # xgboost.train(params, dtrain, n_estimators, obj=objective), without its per-round checks
    booster = train_with_objective(params, dtrain, int(n_estimators), objective)
    return BoostedTobit(booster)


class Grabit(CensoredGaussianMethod):
    name: ClassVar[str] = "Grabit"
    # XGBoost's training loop without its per-round checks (imported where used)
    lazy_modules: ClassVar[tuple[str, ...]] = ("stragglers.methods._xgb_training",)
    defaults: ClassVar[dict[str, Any]] = {
        "censoring": Param(
            "elapsed",
            str,
            choices=CENSORING_MODES,
            doc="a running task's censoring point: its elapsed time, or the longest finished latency",
        ),  # or "max_finished" (the paper's code)
        "target": Param(
            "latency",
            str,
            choices=TARGETS,
            doc="the regression target: latency / tau, or its logarithm",
        ),  # or "log_latency"
        "decision": Param(
            "latent_mean",
            str,
            choices=GAUSSIAN_DECISIONS,
            doc="flag on the latent mean, or on the median conditional on the elapsed time",
        ),  # or "conditional_median"
        "sigma": Param(
            None,
            float,
            gt=0,
            nullable=True,
            doc="the Tobit noise scale on the target's scale (null: a linear fit's residual spread)",
        ),  # None: residual std of a linear fit; else on the latency / tau scale
        "n_estimators": Param(100, int, ge=1, doc="boosting rounds"),
        "learning_rate": Param(0.1, float, gt=0, doc="boosting step size"),
        "max_depth": Param(5, int, ge=1, doc="depth of each tree"),
        "refit_growth": 0.5,
    }

    def fit_model(self, Z, y, censored, seed):
        sigma = self.params["sigma"]
        sigma = residual_sigma(Z, y) if sigma is None else max(float(sigma), _MIN_SIGMA)
        model = fit_boosted_tobit(
            Z,
            y,
            censored,
            sigma,
            n_estimators=self.params["n_estimators"],
            learning_rate=self.params["learning_rate"],
            max_depth=self.params["max_depth"],
            seed=seed,
        )
        return model, sigma
