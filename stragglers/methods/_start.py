"""Shared pieces of START and START-MLE (Tuli et al., IEEE TSC 2021; docs/methods.md).

The scraped paper lost its formulas; they are rebuilt from the standard Pareto (type I)
definitions:

    F(x) = 1 - (beta / x) ** alpha           for x >= beta (scale beta > 0, shape alpha > 0)
    mean = alpha * beta / (alpha - 1)        (defined for alpha > 1, as START requires)

START calls a task a straggler when its time exceeds K x the mean and expects

    k_hat = n * (1 - F(K * mean)) = n * ((alpha - 1) / (K * alpha)) ** alpha

of the n tasks to straggle (beta cancels). Its rule: once n - k_hat tasks have finished, the
remaining ones are stragglers. K is the paper's lost straggler parameter; here it is set so that
"K x the mean" marks the same tasks as the evaluation's quantile threshold (p90) on the jobs
that had finished earlier: K = median over those jobs of p_q(latency) / mean(latency).

Maximum likelihood at a checkpoint: finished tasks are observed latencies x_i, running tasks
are right-censored at their elapsed time c_j (they will take longer). With beta fixed, the
log-likelihood  sum_i [ln alpha + alpha ln beta - (alpha+1) ln x_i] + sum_j alpha ln(beta/c_j)
(over c_j >= beta) is maximised by

    beta_hat  = min_i x_i
    alpha_hat = d / (sum_i ln(x_i / beta_hat) + sum_j ln(max(c_j, beta_hat) / beta_hat))

with d the number of finished tasks (uncensored: the usual alpha_hat = n / sum ln(x_i/beta)).
"""

from __future__ import annotations

import logging
import math

import numpy as np

log = logging.getLogger(__name__)

# shape values are kept inside (ALPHA_MIN, ALPHA_MAX): START needs alpha > 1 for the mean, and
# a sample of equal times would otherwise give alpha = inf
ALPHA_MIN = 1.0 + 1e-3
ALPHA_MAX = 1e3


def pareto_mle(observed: np.ndarray, censored: np.ndarray | None = None) -> tuple[float, float]:
    """(beta, alpha) maximising the Pareto likelihood of `observed` times with `censored`
    times right-censored (the true time is larger). Raises on an empty or non-positive sample."""
    observed = np.asarray(observed, dtype=float)
    if observed.size == 0:
        raise ValueError("pareto_mle: no observed time")
    if not np.all(np.isfinite(observed)) or np.any(observed <= 0):
        raise ValueError("pareto_mle: times must be positive and finite")
    beta = float(observed.min())
    total = float(np.sum(np.log(observed / beta)))
    if censored is not None and len(censored):
        censored = np.asarray(censored, dtype=float)
        total += float(np.sum(np.log(np.maximum(censored, beta) / beta)))
    alpha = observed.size / total if total > 0 else math.inf
    return beta, alpha


def clip_alpha(alpha: float) -> float:
    return float(min(max(alpha, ALPHA_MIN), ALPHA_MAX))


def expected_stragglers(n_tasks: int, alpha: float, mean_multiple: float) -> float:
    """k_hat = n * P(X > K * mean) for a Pareto of shape alpha (> 1): n ((a-1)/(K a))^a."""
    alpha = clip_alpha(alpha)
    if mean_multiple <= 0:
        raise ValueError(f"straggler multiple K must be positive, got {mean_multiple}")
    ratio = (alpha - 1.0) / (mean_multiple * alpha)
    # K * mean below beta (ratio > 1): every task is beyond it
    return float(n_tasks * min(1.0, ratio**alpha))


def mean_multiple_of_quantile(latency: np.ndarray, quantile: float) -> float:
    """The multiple K of a job's mean latency at which its `quantile` threshold lies."""
    latency = np.asarray(latency, dtype=float)
    return float(np.quantile(latency, quantile) / latency.mean())


def start_rule(n_tasks: int, n_finished: int, k_hat: float, n_running: int) -> np.ndarray:
    """START's Algorithm 1: with k = round(k_hat) >= 1, once n - k tasks have finished every
    remaining running task is flagged; k = 0 mitigates nothing."""
    k = int(round(k_hat))
    flag = k >= 1 and n_finished >= n_tasks - k
    return np.full(n_running, flag, dtype=bool)


# p_q / mean of each earlier job, by (dataset dir, job id, quantile): a job's latencies never
# change, so every START / START-MLE instance in the process shares them
_multiple_cache: dict[tuple[str, str, float], float] = {}


def history_mean_multiple(
    history, time: float, quantile: float, max_jobs: int
) -> tuple[float, int]:
    """K from the (at most `max_jobs` latest) jobs finished by `time`: the median of their
    p_q / mean. Returns (K, number of jobs used); (nan, 0) without history."""
    finished = history.finished_before(time).tail(max_jobs)
    values = []
    for job_id in finished["job_id"]:
        key = (str(history.converted_dir), str(job_id), float(quantile))
        if key not in _multiple_cache:
            _multiple_cache[key] = mean_multiple_of_quantile(
                history.load(job_id, time).latency, quantile
            )
        values.append(_multiple_cache[key])
    if not values:
        return math.nan, 0
    return float(np.median(values)), len(values)
