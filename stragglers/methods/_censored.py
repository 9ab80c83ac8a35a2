"""Censored-regression pieces shared by Tobit, Grabit and CoxPH.

At a checkpoint a finished task's latency is observed; a running task's latency is only known
to exceed a censoring point: its elapsed time (`censoring="elapsed"`, the default) or, as in
the paper's code, the largest finished latency (`censoring="max_finished"`).

Targets are expressed relative to the straggler threshold tau, which keeps the optimisation
well scaled for jobs of any duration: `target="latency"` models latency / tau (Gaussian on
latency, as the paper describes Tobit and Grabit), `target="log_latency"` models
log(latency / tau). The threshold is then 1 (latency) or 0 (log latency).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from stragglers.methods._features import Standardizer, fit_standardizer, job_seed
from stragglers.methods._online import OnlineRefitMethod
from stragglers.methods.base import Checkpoint

CENSORING_MODES = ("elapsed", "max_finished")
TARGETS = ("latency", "log_latency")
GAUSSIAN_DECISIONS = ("latent_mean", "conditional_median")
# latencies/elapsed times below this share of tau are floored (log of 0, zero durations)
_MIN_RELATIVE_TIME = 1e-6


def check_choice(method: str, setting: str, value: object, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(
            f"method {method}: {setting} must be one of {list(allowed)}, got {value!r}"
        )
    return str(value)


def censoring_points(checkpoint: Checkpoint, mode: str) -> np.ndarray:
    """Seconds each running task's latency is known to exceed (the censoring point)."""
    if mode == "elapsed":
        return np.asarray(checkpoint.running_elapsed, dtype=np.float64)
    if mode == "max_finished":
        finished = checkpoint.finished_latency
        top = float(np.max(finished)) if len(finished) else 0.0
        return np.full(len(checkpoint.running_tasks), top)
    raise ValueError(f"unknown censoring mode {mode!r}; known: {list(CENSORING_MODES)}")


def to_target(seconds: np.ndarray, tau: float, target: str) -> np.ndarray:
    """Latencies (or censoring points) in seconds -> the modelled target."""
    if not tau > 0:
        raise ValueError(f"straggler threshold must be > 0, got {tau}")
    relative = np.maximum(np.asarray(seconds, dtype=np.float64) / tau, _MIN_RELATIVE_TIME)
    if target == "latency":
        return relative
    if target == "log_latency":
        return np.log(relative)
    raise ValueError(f"unknown target {target!r}; known: {list(TARGETS)}")


def target_threshold(target: str) -> float:
    """The straggler threshold tau on the target scale."""
    return 1.0 if target == "latency" else 0.0


def censored_design(checkpoint: Checkpoint, tau: float, target: str, censoring: str):
    """(y, censored) over finished then running tasks of a checkpoint, on the target scale."""
    y_finished = to_target(checkpoint.finished_latency, tau, target)
    y_running = to_target(censoring_points(checkpoint, censoring), tau, target)
    y = np.r_[y_finished, y_running]
    censored = np.r_[np.zeros(len(y_finished), dtype=bool), np.ones(len(y_running), dtype=bool)]
    return y, censored


def observed_time(checkpoint: Checkpoint, mode: str) -> float:
    """Total task time the data covers: finished latencies plus running censoring points.

    Grows between checkpoints even when no task finished (with censoring="elapsed"), which is
    when a censored model learns that the running tasks are long; used to schedule refits.
    """
    return float(np.sum(checkpoint.finished_latency) + np.sum(censoring_points(checkpoint, mode)))


def _log_normal_sf(u: np.ndarray) -> np.ndarray:
    from scipy import special

    return special.log_ndtr(-u)


_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def inverse_mills(u: np.ndarray) -> np.ndarray:
    """phi(u) / (1 - Phi(u)), the hazard of the standard normal, computed stably."""
    u = np.asarray(u, dtype=np.float64)
    return np.exp(-0.5 * u * u - _LOG_SQRT_2PI - _log_normal_sf(u))


def tobit_negloglik(
    params: np.ndarray, X: np.ndarray, y: np.ndarray, censored: np.ndarray, l2: float = 0.0
) -> tuple[float, np.ndarray]:
    """Negative log-likelihood of a right-censored Gaussian linear model, and its gradient.

    params = (beta..., log sigma); X includes the intercept column (column 0, not penalised).
    Uncensored rows contribute log sigma + z^2 / 2 (constants dropped), rows censored at c
    contribute -log P(Y > c) = -log(1 - Phi((c - mu) / sigma)).
    """
    beta, log_sigma = params[:-1], params[-1]
    sigma = np.exp(log_sigma)
    mu = X @ beta
    z = (y - mu) / sigma
    obs = ~censored
    nll = np.sum(log_sigma + 0.5 * z[obs] ** 2) - np.sum(_log_normal_sf(z[censored]))
    # d nll / d mu and d nll / d log sigma, per row
    d_mu = np.empty_like(z)
    d_ls = np.empty_like(z)
    d_mu[obs] = -z[obs] / sigma
    d_ls[obs] = 1.0 - z[obs] ** 2
    h = inverse_mills(z[censored])
    d_mu[censored] = -h / sigma
    d_ls[censored] = -h * z[censored]
    grad = np.r_[X.T @ d_mu, d_ls.sum()]
    if l2 > 0:
        penalised = beta.copy()
        penalised[0] = 0.0
        nll += 0.5 * l2 * float(penalised @ penalised)
        grad[:-1] += l2 * penalised
    return float(nll), grad


def fit_tobit(
    X: np.ndarray, y: np.ndarray, censored: np.ndarray, l2: float = 1e-3, max_iter: int = 500
) -> tuple[np.ndarray, float]:
    """Maximum-likelihood (beta, sigma) of the censored Gaussian linear model.

    Starts from the ridge least-squares fit that treats censoring points as observations.
    """
    from scipy import optimize

    p = X.shape[1]
    ridge = l2 * np.eye(p)
    ridge[0, 0] = 0.0
    beta0 = np.linalg.lstsq(X.T @ X + ridge + 1e-12 * np.eye(p), X.T @ y, rcond=None)[0]
    resid = y - X @ beta0
    spread = max(float(np.std(y)), float(np.mean(np.abs(y))), 1e-3)
    sigma0 = max(float(np.std(resid)), 1e-3 * spread)
    start = np.r_[beta0, np.log(sigma0)]
    # keep sigma within 6 orders of magnitude of the data's spread: outside, the
    # likelihood's exponentials overflow and the line search wanders
    bounds = [(None, None)] * p + [(np.log(1e-4 * spread), np.log(1e2 * spread))]
    result = optimize.minimize(
        tobit_negloglik,
        start,
        args=(X, y, censored, l2),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iter},
    )
    params = result.x if np.all(np.isfinite(result.x)) else start
    return params[:-1], float(np.exp(params[-1]))


def tobit_grad_hess(
    f: np.ndarray, y: np.ndarray, censored: np.ndarray, sigma: float
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian of the Tobit negative log-likelihood in the prediction f.

    Observed rows: (f - y) / sigma^2 and 1 / sigma^2. Rows right-censored at c, with
    u = (c - f) / sigma and h the inverse Mills ratio h(u): -h / sigma and h (h - u) / sigma^2
    (always in (0, 1 / sigma^2)).
    """
    grad = np.empty_like(f)
    hess = np.empty_like(f)
    obs = ~censored
    s2 = sigma * sigma
    grad[obs] = (f[obs] - y[obs]) / s2
    hess[obs] = 1.0 / s2
    u = (y[censored] - f[censored]) / sigma
    h = inverse_mills(u)
    grad[censored] = -h / sigma
    hess[censored] = np.clip(h * (h - u), 1e-12, 1.0) / s2
    return grad, hess


def gaussian_flags(
    mu: np.ndarray, sigma: float, elapsed_target: np.ndarray, threshold: float, decision: str
) -> np.ndarray:
    """Straggler calls from a latent Gaussian latency model N(mu, sigma^2).

    latent_mean: mu >= threshold (the model's latency prediction, as in the paper's code).
    conditional_median: P(Y >= threshold | Y > elapsed) >= 1/2, i.e. given how long the task
    has already run, it is at least as likely as not to reach the threshold (always true once
    elapsed >= threshold).
    """
    mu = np.asarray(mu, dtype=np.float64)
    if decision == "latent_mean":
        return mu >= threshold
    if decision == "conditional_median":
        elapsed_target = np.asarray(elapsed_target, dtype=np.float64)
        log_p_threshold = _log_normal_sf((threshold - mu) / sigma)
        log_p_elapsed = _log_normal_sf((elapsed_target - mu) / sigma)
        return (elapsed_target >= threshold) | (log_p_threshold - log_p_elapsed >= np.log(0.5))
    raise ValueError(f"unknown decision {decision!r}; known: {list(GAUSSIAN_DECISIONS)}")


# --------------------------------------------------------------------------------------------
# Tobit / Grabit: a latent Gaussian latency model fit by censored maximum likelihood
# --------------------------------------------------------------------------------------------

CENSORED_FAMILY = "Censored and survival regression"


@dataclass(frozen=True)
class GaussianFit:
    scaler: Standardizer
    columns: np.ndarray  # bool mask of the feature columns used
    model: Any  # object with predict(Z) -> latent mean on the target scale
    sigma: float


class CensoredGaussianMethod(OnlineRefitMethod):
    """Fit mu(x) with latency ~ N(mu(x), sigma^2), right-censored for running tasks."""

    family: ClassVar[str] = CENSORED_FAMILY

    def __init__(self, params: dict[str, Any] | None = None, seed: int = 0):
        super().__init__(params, seed)
        check_choice(self.name, "censoring", self.params["censoring"], CENSORING_MODES)
        check_choice(self.name, "target", self.params["target"], TARGETS)
        check_choice(self.name, "decision", self.params["decision"], GAUSSIAN_DECISIONS)

    def information(self, checkpoint: Checkpoint) -> float:
        return observed_time(checkpoint, self.params["censoring"])

    def identifiable(self, n_finished: int, n_columns: int) -> bool:
        """Whether the finished tasks can pin the model down (subclasses may require more)."""
        return n_finished >= 1

    @abc.abstractmethod
    def fit_model(
        self, Z: np.ndarray, y: np.ndarray, censored: np.ndarray, seed: int
    ) -> tuple[Any, float]:
        """Fit on z-scored features Z; return (model with predict(Z), sigma)."""

    def _fit(self, checkpoint: Checkpoint) -> GaussianFit | None:
        if len(checkpoint.finished_tasks) < 1:
            return None  # nothing observed: every latency is censored
        scaler = fit_standardizer(checkpoint.finished_features, checkpoint.running_features)
        columns = scaler.varying.copy()
        if not self.identifiable(len(checkpoint.finished_tasks), int(columns.sum())):
            return None
        Z = np.vstack(
            [
                scaler.transform(checkpoint.finished_features),
                scaler.transform(checkpoint.running_features),
            ]
        )[:, columns]
        y, censored = censored_design(
            checkpoint,
            self.job.straggler_threshold,
            self.params["target"],
            self.params["censoring"],
        )
        seed = job_seed(self.seed, self.job.seed, checkpoint.index)
        model, sigma = self.fit_model(Z, y, censored, seed)
        return GaussianFit(scaler=scaler, columns=columns, model=model, sigma=float(sigma))

    def _flag(self, state: GaussianFit, checkpoint: Checkpoint) -> np.ndarray:
        Z = state.scaler.transform(checkpoint.running_features)[:, state.columns]
        mu = state.model.predict(Z)
        tau = self.job.straggler_threshold
        target = self.params["target"]
        elapsed = to_target(checkpoint.running_elapsed, tau, target)
        return gaussian_flags(
            mu, state.sigma, elapsed, target_threshold(target), self.params["decision"]
        )
