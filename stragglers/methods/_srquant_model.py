"""SRQuant's analytical model (laser.txt §IV-A, Theorems 1-2, Eq. 9): pure functions.

Model: every attempt's execution time is Pareto(t_min, beta), attempts independent. A task
whose original attempt would run past the deadline D is killed at tau_est and r + 1 attempts
resume its remaining share (1 - phi_est) of the work, each taking (1 - phi_est) * T' with T'
Pareto(t_min, beta); at tau_kill = tau_est + kill_delay the fastest is kept.

- Task meets D: T_1 <= D, or T_1 > D and some attempt finishes by D:
  R(r) = [1 - S(D) * S_res(D - tau_est)^(r+1)]^N, S(t) = min(1, (t_min/t)^beta),
  S_res(t) = min(1, ((1 - phi) t_min / t)^beta)       (Theorem 1, Eq. 3)
- Machine time of a task (Theorem 2, Eq. 4-6): E[T_1 | T_1 <= D] P(T_1 <= D)
  + P(T_1 > D) (tau_est + E[M] + r E[min(M, kill_delay)]), M = the fastest attempt's time
  = Pareto((1 - phi) t_min, beta (r + 1)). The paper prints Eq. 8 as
  tau_est + r (tau_kill - tau_est) + t_min (1-phi)^(beta(r+1)) / (beta(r+1) - 1) + t_min,
  which is not the mean of M (its exponent and its last term are misprints as far as we can
  tell); we use the exact mean, and a loser runs min(M, kill_delay), not always kill_delay.
  Tested against Monte Carlo in tests/test_srquant_laser.py. E_r(T) = N * E(T_j).
"""

from __future__ import annotations

import math

import numpy as np


def fit_pareto(latency: np.ndarray) -> tuple[float, float]:
    """Maximum-likelihood Pareto(t_min, beta): t_min = min, beta = n / sum(log(x / t_min))."""
    x = np.asarray(latency, dtype=np.float64)
    x = x[np.isfinite(x) & (x > 0)]
    if x.size < 2:
        raise ValueError(f"fit_pareto: need >= 2 positive latencies, got {x.size}")
    t_min = float(x.min())
    total = float(np.log(x / t_min).sum())
    if total <= 0:
        raise ValueError("fit_pareto: all latencies are equal; beta is unbounded")
    return t_min, x.size / total


def _survival(t: float, scale: float, beta: float) -> float:
    if t <= 0 or scale >= t:
        return 1.0
    return (scale / t) ** beta  # base < 1: underflows to 0, never overflows


def pocd(
    r: int, n_tasks: int, t_min: float, beta: float, deadline: float, tau_est: float, phi_est: float
) -> float:
    """R(r): probability that all n_tasks finish by the deadline (Theorem 1)."""
    miss_original = _survival(deadline, t_min, beta)
    miss_attempt = _survival(deadline - tau_est, (1.0 - phi_est) * t_min, beta)
    return (1.0 - miss_original * miss_attempt ** (r + 1)) ** n_tasks


def _mean_truncated_below(t_min: float, beta: float, deadline: float) -> float:
    """E[T | T <= D] for T ~ Pareto(t_min, beta) (Eq. 6)."""
    if deadline <= t_min:
        return t_min
    if abs(beta - 1.0) < 1e-12:
        integral = t_min * math.log(deadline / t_min)
    else:
        # beta t_min^beta (D^(1-beta) - t_min^(1-beta)) / (1 - beta), written without overflow
        integral = beta * t_min * ((t_min / deadline) ** (beta - 1) - 1) / (1 - beta)
    return integral / (1.0 - (t_min / deadline) ** beta)


def _mean_min_with_cap(scale: float, shape: float, cap: float) -> float:
    """E[min(M, cap)] for M ~ Pareto(scale, shape)."""
    if cap <= scale:
        return cap
    if abs(shape - 1.0) < 1e-12:
        return scale + scale * math.log(cap / scale)
    return scale + scale * ((scale / cap) ** (shape - 1) - 1) / (1 - shape)


def expected_machine_time(
    r: int,
    n_tasks: int,
    t_min: float,
    beta: float,
    deadline: float,
    tau_est: float,
    phi_est: float,
    kill_delay: float,
) -> float:
    """E_r(T) = N * E(T_j) (Theorem 2), with the exact mean of the fastest attempt."""
    p_miss = _survival(deadline, t_min, beta)
    scale = (1.0 - phi_est) * t_min
    shape = beta * (r + 1)
    if shape <= 1:
        return math.inf
    mean_fastest = scale * shape / (shape - 1)
    straggler = tau_est + mean_fastest + r * _mean_min_with_cap(scale, shape, kill_delay)
    normal = _mean_truncated_below(t_min, beta, deadline) if p_miss < 1 else 0.0
    return n_tasks * ((1 - p_miss) * normal + p_miss * straggler)


def choose_attempts(
    n_tasks: int,
    t_min: float,
    beta: float,
    deadline: float,
    tau_est: float,
    phi_est: float,
    kill_delay: float,
    r_max: int,
    pocd_min: float,
    theta_cost: float,
) -> tuple[int, np.ndarray]:
    """Algorithm 1: r in 0..r_max maximising U(r) = log(R(r) - R_min) - theta C E_r(T).

    Returns (r, U over r); ties keep the smallest r (strict > as in Algorithm 1); when no r
    reaches R(r) > R_min every U is -inf and r = 0."""
    utility = np.full(r_max + 1, -np.inf)
    for r in range(r_max + 1):
        gap = pocd(r, n_tasks, t_min, beta, deadline, tau_est, phi_est) - pocd_min
        cost = expected_machine_time(
            r, n_tasks, t_min, beta, deadline, tau_est, phi_est, kill_delay
        )
        if gap > 0 and math.isfinite(cost):
            utility[r] = math.log(gap) - theta_cost * cost
    best = 0
    for r in range(r_max + 1):
        if utility[r] > utility[best]:
            best = r
    return best, utility


# The paper's jobs (laser.txt Table I, §V): 10 tasks, a mean machine running time of 1,640 s;
# theta C = 1e-4 per machine-second puts the cost term near 1e-4 x 1640 = 0.164 there.
PAPER_JOB_MACHINE_TIME = 1640.0
THETA_SCALINGS = ("job", "literal")


def scaled_theta(
    theta_cost: float,
    scaling: str,
    machine_time_r0: float,
    reference_machine_time: float = PAPER_JOB_MACHINE_TIME,
) -> float:
    """theta C per machine-second for one decision.

    "literal": `theta_cost` as given (the paper's 1e-4). "job": the trade-off of the paper's
    jobs carried over to this one: theta C x E_r(T) is worth as much, relative to the job's
    machine time without extra attempts (E_0(T), `machine_time_r0`), as it was on a job of
    `reference_machine_time` machine-seconds, i.e.
        theta_job = theta_cost x reference_machine_time / E_0(T)
    so the cost term is theta_cost x 1640 x E_r(T) / E_0(T) = 0.164 x E_r(T) / E_0(T) with the
    defaults. A job of 1,640 machine-seconds keeps the literal value; a job 100x larger gets
    a theta 100x smaller. Without a usable E_0 (not finite or not > 0) the literal value."""
    if scaling not in THETA_SCALINGS:
        raise ValueError(f"theta_scaling must be one of {THETA_SCALINGS}, got {scaling!r}")
    if scaling == "literal" or not (math.isfinite(machine_time_r0) and machine_time_r0 > 0):
        return float(theta_cost)
    return float(theta_cost) * float(reference_machine_time) / float(machine_time_r0)
