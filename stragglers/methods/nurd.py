"""NURD: negative-unlabeled straggler prediction (Ding et al., MLSys 2022, Algorithm 1).

A latency regressor h_t is trained on finished tasks only; a propensity model g_t estimates
z = P(finished | x) from finished vs running tasks; each running task's prediction is divided
by w = max(eps, min(z + delta, 1)), where delta = 1/(1 + rho) - alpha and
rho = ||c_fin||^2 / ||c_run - c_fin||^2 is computed from the feature centroids when prediction
starts. A task is flagged when y_hat / w >= tau (the straggler threshold).

The arithmetic lives in small pure functions (`centroid_ratio`, `calibration_term`,
`propensity_weight`, `adjusted_prediction`) so it can be tested on hand-made numbers.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from stragglers.methods.base import Checkpoint, JobInfo, Method, Param


def centroid_ratio(finished_features: np.ndarray, running_features: np.ndarray) -> float:
    """rho = ||c_fin||^2 / ||c_run - c_fin||^2 (paper, Algorithm 1 line 5)."""
    c_fin = finished_features.mean(axis=0)
    c_run = running_features.mean(axis=0)
    distance = float(np.sum((c_run - c_fin) ** 2))
    norm = float(np.sum(c_fin**2))
    if distance == 0.0:
        return np.inf
    return norm / distance


def calibration_term(rho: float, alpha: float) -> float:
    """delta = 1 / (1 + rho) - alpha (paper, Equation 3); rho = inf gives -alpha."""
    return 1.0 / (1.0 + rho) - alpha


def propensity_weight(z: np.ndarray, delta: float, epsilon: float) -> np.ndarray:
    """w = max(eps, min(z + delta, 1)) (paper, Algorithm 1 line 15)."""
    return np.maximum(epsilon, np.minimum(np.asarray(z) + delta, 1.0))


def adjusted_prediction(predicted_latency: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """y_adj = y_hat / w (paper, Equation 1)."""
    return np.asarray(predicted_latency) / np.asarray(weight)


def minmax_scale(reference: np.ndarray, *blocks: np.ndarray) -> list[np.ndarray]:
    """Scale blocks to [0, 1] by the min and max of `reference` (data available now)."""
    low = reference.min(axis=0)
    span = reference.max(axis=0) - low
    span = np.where(span > 0, span, 1.0)
    return [(b - low) / span for b in blocks]


def logistic_objective(
    design: np.ndarray, labels: np.ndarray, beta: np.ndarray, penalty: np.ndarray
) -> float:
    """sum of log-losses + 1/2 sum penalty * beta^2, computed without overflow."""
    logits = design @ beta
    return float(
        np.sum(np.logaddexp(0.0, logits) - labels * logits) + 0.5 * np.sum(penalty * beta**2)
    )


def fit_logistic(
    features: np.ndarray,
    labels: np.ndarray,
    l2: float = 1.0,
    initial: np.ndarray | None = None,
    max_iter: int = 100,
    tol: float = 1e-8,
) -> np.ndarray:
    """L2-penalised logistic regression by safeguarded Newton's method; intercept unpenalised.

    Minimises sum log-loss + l2/2 * ||w||^2, the objective of scikit-learn's
    LogisticRegression(C=1/l2). Returns [intercept, coefficients...]. A few Newton steps from a
    warm start replace a generic solver, which matters when it is refit at every checkpoint.

    Pure Newton from a warm start can diverge: when many tasks finish at once the previous
    optimum sits where the log-loss is nearly flat, the Hessian is tiny, and the full step
    overshoots (seen on a default job: objective 87 -> 5,652, intercept -2.4e11). So each step is
    backtracked (halved) until the objective decreases (Armijo condition), and a warm start
    whose objective is above the cold start's (beta = 0) is dropped for the cold start. The
    objective is strictly convex (l2 > 0 on the coefficients; the intercept direction is
    strictly convex unless one class is empty), so this reaches the unique optimum from any
    start. Convergence: the largest gradient component below `tol` times the row count.
    """
    n, d = features.shape
    design = np.hstack([np.ones((n, 1)), features])
    labels = np.asarray(labels, dtype=float)
    penalty = np.full(d + 1, l2)
    penalty[0] = 0.0
    beta = np.zeros(d + 1)
    value = logistic_objective(design, labels, beta, penalty)
    if initial is not None and np.all(np.isfinite(initial)) and len(initial) == d + 1:
        warm = np.asarray(initial, dtype=float).copy()
        warm_value = logistic_objective(design, labels, warm, penalty)
        if warm_value < value:
            beta, value = warm, warm_value
    for _ in range(max_iter):
        logits = design @ beta
        prob = 1.0 / (1.0 + np.exp(-np.clip(logits, -35, 35)))
        gradient = design.T @ (prob - labels) + penalty * beta
        if np.max(np.abs(gradient)) < tol * max(n, 1):
            break
        curvature = prob * (1.0 - prob)
        hessian = (design * curvature[:, None]).T @ design + np.diag(penalty + 1e-10)
        step = np.linalg.solve(hessian, gradient)
        slope = float(gradient @ step)  # > 0: the Hessian is positive definite
        t = 1.0
        while True:
            candidate = beta - t * step
            candidate_value = logistic_objective(design, labels, candidate, penalty)
            if candidate_value <= value - 1e-4 * t * slope or t < 1e-10:
                break
            t *= 0.5
        if not candidate_value <= value:  # no decrease even for a tiny step: at the optimum
            break
        beta, value = candidate, candidate_value
        if np.max(np.abs(t * step)) < tol:
            break
    return beta


def predict_logistic(beta: np.ndarray, features: np.ndarray) -> np.ndarray:
    logits = beta[0] + features @ beta[1:]
    return 1.0 / (1.0 + np.exp(-np.clip(logits, -35, 35)))


class BoostedLatencyModel:
    """Gradient-boosted trees (XGBoost, squared error) through the native API.

    The scikit-learn wrapper adds ~40 ms per fit on a few hundred rows; the native booster
    with `hist` trees fits in ~10-20 ms, which matters when refitting per checkpoint.
    """

    def __init__(
        self, n_estimators: int, max_depth: int, learning_rate: float, max_bin: int, seed: int
    ):
        self.rounds = int(n_estimators)
        self.params = {
            "objective": "reg:squarederror",
            "tree_method": "hist",
            "max_depth": int(max_depth),
            "eta": float(learning_rate),
            "max_bin": int(max_bin),
            # no L2 shrinkage of leaf values, at least one task per leaf: the regression trees
            # of the paper's GBTR (scikit-learn defaults); XGBoost's lambda=1 shrinks the
            # predictions of the small early training sets towards the mean
            "lambda": 0.0,
            "min_child_weight": 1.0,
            "nthread": 1,
            "seed": int(seed),
            "verbosity": 0,
        }

    def fit(self, features: np.ndarray, latency: np.ndarray) -> BoostedLatencyModel:
        import xgboost

        from stragglers.methods._xgb_training import train_builtin

        data = xgboost.DMatrix(features, label=latency, nthread=1)
        # xgboost.train's rounds, without its final reset (which frees the training caches):
        # the same booster, at less cost per fit
        self.booster = train_builtin(self.params, data, self.rounds, reset=False)
        return self

    def predict(self, features: np.ndarray) -> np.ndarray:
        return self.booster.inplace_predict(features)


class NURD(Method):
    """NURD with the calibrated weighting (the paper's method)."""

    name: ClassVar[str] = "NURD"
    family: ClassVar[str] = "Ours"
    weighting: ClassVar[str] = "calibrated"  # "calibrated" | "propensity" | "none"
    protocol_rules: ClassVar[tuple[str, ...]] = ("regressor",)  # under regressor "protocol"
    lazy_modules: ClassVar[tuple[str, ...]] = (
        "stragglers.methods._gradient_boosting",
        "stragglers.methods._xgb_training",
    )
    defaults: ClassVar[dict[str, Any]] = {
        "alpha": Param(
            0.5,
            float,
            ge=0,
            le=1,
            doc="calibration strength: how much the finished/running centroid ratio raises predictions",
        ),  # calibration parameter (paper, Section 6)
        "epsilon": Param(
            0.05, float, gt=0, doc="smallest propensity weight"
        ),  # minimum weight (paper, Section 6)
        # "protocol": the replay protocol's `regressor` rule (`paper`: sklearn-gbr, else
        # xgboost); "xgboost" | "sklearn-gbr" (the reference script's choice) force one
        "regressor": Param(
            "protocol",
            str,
            choices=("protocol", "xgboost", "sklearn-gbr"),
            doc="latency regressor: the protocol's choice, XGBoost, or scikit-learn's gradient boosting",
        ),
        "gbr_random_state": Param(
            42, int, ge=0, doc="random_state of scikit-learn's gradient boosting"
        ),  # sklearn-gbr: the reference script's --rs default
        "n_estimators": Param(100, int, ge=1, doc="boosting rounds of the latency regressor"),
        "max_depth": Param(3, int, ge=1, doc="depth of each tree"),
        "learning_rate": Param(0.1, float, gt=0, doc="boosting step size"),
        "max_bin": Param(
            64, int, ge=2, doc="XGBoost histogram bins per feature"
        ),  # XGBoost histogram bins: jobs have hundreds of tasks, not millions
        "propensity_l2": Param(
            1.0,
            float,
            ge=0,
            doc="L2 penalty of the propensity (finished vs running) logistic regression",
        ),  # = 1 / C of scikit-learn's default LogisticRegression
        # refit the regressor when the finished set has grown by this fraction since the last
        # fit (0: at every checkpoint where a task finished; fewer refits cost F1 here)
        "refit_growth": Param(
            0.0,
            float,
            ge=0,
            doc="refit the regressor once the finished tasks grew by this share (0: whenever one more finished)",
        ),
        # refit even when no task finished since the last fit (the reference code's loop)
        "refit_every_checkpoint": Param(False, bool, doc="refit the regressor at every checkpoint"),
    }

    def start_job(self, job: JobInfo) -> None:
        super().start_job(job)
        # alpha = 0 is the reference script's default (gamma = 0); epsilon bounds the weight
        if "alpha" in self.params and not self.params["alpha"] >= 0:
            raise ValueError(f"method {self.name}: alpha must be >= 0")
        if "epsilon" in self.params and not self.params["epsilon"] > 0:
            raise ValueError(f"method {self.name}: epsilon must be > 0")
        if self.params["regressor"] not in ("protocol", "xgboost", "sklearn-gbr"):
            raise ValueError(
                f"method {self.name}: regressor must be 'protocol', 'xgboost' or 'sklearn-gbr', "
                f"got {self.params['regressor']!r}"
            )
        self.regressor_kind = self.params["regressor"]
        if self.regressor_kind == "protocol":
            self.regressor_kind = (
                "sklearn-gbr" if self.rules.regressor == "sklearn_gbr" else "xgboost"
            )
        self.delta: float | None = None
        self.rho: float | None = None
        self.regressor = None
        self.fitted_on = 0
        self.propensity_beta: np.ndarray | None = None

    # -- models -----------------------------------------------------------------------------
    def _new_regressor(self):
        p = self.params
        if self.regressor_kind == "sklearn-gbr":
            from stragglers.methods._gradient_boosting import (
                DirectTreeGradientBoostingRegressor,
            )

            # scikit-learn's defaults otherwise (squared error, subsample 1), as the reference
            # script's GradientBoostingRegressor(random_state=rs); the same trees, grown with
            # less Python around each
            return DirectTreeGradientBoostingRegressor(
                n_estimators=p["n_estimators"],
                max_depth=p["max_depth"],
                learning_rate=p["learning_rate"],
                random_state=int(p["gbr_random_state"]),
            )
        return BoostedLatencyModel(
            n_estimators=p["n_estimators"],
            max_depth=p["max_depth"],
            learning_rate=p["learning_rate"],
            max_bin=p["max_bin"],
            seed=self.job.seed,
        )

    def _refit_regressor(self, checkpoint: Checkpoint) -> None:
        n_finished = len(checkpoint.finished_tasks)
        grown = n_finished >= self.fitted_on * (1.0 + self.params["refit_growth"])
        if (
            self.regressor is None
            or self.params["refit_every_checkpoint"]
            or (n_finished > self.fitted_on and grown)
        ):
            self.regressor = self._new_regressor()
            self.regressor.fit(checkpoint.finished_features, checkpoint.finished_latency)
            self.fitted_on = n_finished

    def _scaled(self, checkpoint: Checkpoint, finished: np.ndarray, running: np.ndarray):
        """Features on [0, 1]: as given when the protocol scaled them already (the reference
        script fits its logistic regression and centroids on those rows), else min-max scaled
        with the data visible now."""
        if checkpoint.prescaled:
            return finished, running
        return minmax_scale(np.vstack([finished, running]), finished, running)

    def _propensity(self, finished_scaled: np.ndarray, running_scaled: np.ndarray) -> np.ndarray:
        """z = P(finished | x) for the running tasks, refit at every checkpoint."""
        features = np.vstack([finished_scaled, running_scaled])
        labels = np.r_[np.ones(len(finished_scaled)), np.zeros(len(running_scaled))]
        self.propensity_beta = fit_logistic(
            features, labels, l2=self.params["propensity_l2"], initial=self.propensity_beta
        )
        return predict_logistic(self.propensity_beta, running_scaled)

    # -- Algorithm 1 ------------------------------------------------------------------------
    def predict(self, checkpoint: Checkpoint) -> np.ndarray:
        finished, running = checkpoint.finished_features, checkpoint.running_features
        if self.delta is None and self.weighting == "calibrated":
            # centroids on the [0, 1] scale of the data available when prediction starts
            f_scaled, r_scaled = self._scaled(checkpoint, finished, running)
            self.rho = centroid_ratio(f_scaled, r_scaled)
            self.delta = calibration_term(self.rho, self.params["alpha"])
        self._refit_regressor(checkpoint)
        predicted = self.regressor.predict(running)
        if self.weighting == "none":
            adjusted = predicted
        else:
            z = self._propensity(*self._scaled(checkpoint, finished, running))
            if self.weighting == "propensity":
                weight = np.maximum(z, 1e-12)
            else:
                weight = propensity_weight(z, self.delta, self.params["epsilon"])
            adjusted = adjusted_prediction(predicted, weight)
        return adjusted >= self.job.straggler_threshold
