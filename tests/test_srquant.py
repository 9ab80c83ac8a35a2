"""SRQuant: closed forms (Theorems 1-2) against Monte Carlo; Algorithm 1; the method."""

import numpy as np
import pytest

from stragglers.methods._srquant_model import (
    choose_attempts,
    expected_machine_time,
    fit_pareto,
    pocd,
)
from stragglers.methods.base import Checkpoint, JobInfo
from stragglers.methods.srquant import SRQuant, hadoop_estimate


def monte_carlo(r, n_tasks, t_min, beta, deadline, tau_est, phi, kill_delay, n=400_000, seed=0):
    """Simulate the speculative-resume model task by task; (PoCD, machine time of the job)."""
    rng = np.random.default_rng(seed)
    pareto = lambda size, scale: scale * (1 - rng.random(size)) ** (-1 / beta)  # noqa: E731
    original = pareto(n, t_min)
    straggler = original > deadline
    attempts = pareto((n, r + 1), (1 - phi) * t_min)
    fastest = attempts.min(axis=1)
    meets = ~straggler | (tau_est + fastest <= deadline)
    machine = np.where(straggler, tau_est + fastest + r * np.minimum(fastest, kill_delay), original)
    return meets.mean() ** n_tasks, n_tasks * machine.mean(), machine.std() / np.sqrt(n)


@pytest.mark.parametrize("r", [0, 1, 3])
@pytest.mark.parametrize("beta,phi,kill_delay", [(1.7, 0.3, 50.0), (2.5, 0.6, 500.0)])
def test_closed_forms_match_monte_carlo(r, beta, phi, kill_delay):
    t_min, deadline, tau_est, n_tasks = 100.0, 300.0, 150.0, 10
    mc_pocd, mc_machine, se = monte_carlo(
        r, n_tasks, t_min, beta, deadline, tau_est, phi, kill_delay
    )
    assert pocd(r, n_tasks, t_min, beta, deadline, tau_est, phi) == pytest.approx(mc_pocd, abs=0.01)
    exact = expected_machine_time(r, n_tasks, t_min, beta, deadline, tau_est, phi, kill_delay)
    assert abs(exact - mc_machine) < 5 * n_tasks * se


def test_pocd_grows_with_attempts_and_algorithm_1_trades_cost():
    args = dict(n_tasks=10, t_min=100.0, beta=1.7, deadline=300.0, tau_est=150.0, phi_est=0.3)
    values = [pocd(r, **args) for r in range(4)]
    assert values == sorted(values) and values[0] < values[-1]
    r_cheap, _ = choose_attempts(**args, kill_delay=300.0, r_max=5, pocd_min=0.0, theta_cost=0.0)
    r_dear, u = choose_attempts(**args, kill_delay=300.0, r_max=5, pocd_min=0.0, theta_cost=1.0)
    assert r_cheap == 5  # free attempts: the most PoCD
    assert r_dear == int(np.argmax(u)) and r_dear < 5


def test_fit_pareto_recovers_parameters():
    rng = np.random.default_rng(1)
    x = 50.0 * (1 - rng.random(20_000)) ** (-1 / 1.7)
    t_min, beta = fit_pareto(x)
    assert t_min == pytest.approx(50.0, rel=1e-3) and beta == pytest.approx(1.7, rel=0.03)
    with pytest.raises(ValueError):
        fit_pareto(np.array([3.0, 3.0]))


def test_hadoop_estimate():
    np.testing.assert_allclose(
        hadoop_estimate([100.0, 100.0, 50.0], [0.5, 0.0, 0.25], 10.0), [190.0, np.inf, 170.0]
    )


def test_method_flags_estimates_past_the_deadline_without_latencies():
    # clock proxy (no cpu column): progress = elapsed / median finished latency (= 100)
    job = JobInfo("j", 6, ("x",), straggler_threshold=150.0, seed=0, kill_delay=300.0)
    method = SRQuant()
    method.start_job(job)
    cp = Checkpoint(
        time=90.0,
        index=1,
        first_prediction=True,
        finished_tasks=np.array([0, 1, 2]),
        finished_features=np.zeros((3, 1)),
        finished_latency=np.array([80.0, 100.0, 120.0]),
        running_tasks=np.array([3, 4, 5]),
        running_features=np.zeros((3, 1)),
        running_elapsed=np.array([90.0, 90.0, 90.0]),
    )
    flags = method.predict(cp)
    # every task's estimate is the median latency 100 < 150: nothing flagged
    assert not flags.any()
    job = JobInfo("j", 6, ("x",), straggler_threshold=95.0, seed=0, kill_delay=300.0)
    method.start_job(job)
    assert method.predict(cp).all() and 1 <= method.chosen_attempts <= 6


def test_tight_latencies_do_not_overflow():
    # finished latencies within 0.1% of each other: beta in the thousands
    t_min, beta = fit_pareto(np.array([1000.0, 1000.5, 1001.0, 1000.2]))
    assert beta > 1000
    r, utility = choose_attempts(200, t_min, beta, 1500.0, 600.0, 0.4, 300.0, 5, 0.0, 1e-4)
    assert 0 <= r <= 5 and np.isfinite(utility).any()


def test_chosen_attempts_reach_the_replay():
    from stragglers.replay.core import JobRun  # noqa: F401 - the field the replay fills

    job = JobInfo("j", 6, ("x",), straggler_threshold=95.0, seed=0, kill_delay=300.0)
    method = SRQuant()
    method.start_job(job)
    assert method.resume_attempts() is None
    cp = Checkpoint(
        time=90.0,
        index=1,
        first_prediction=True,
        finished_tasks=np.array([0, 1, 2]),
        finished_features=np.zeros((3, 1)),
        finished_latency=np.array([80.0, 100.0, 120.0]),
        running_tasks=np.array([3, 4, 5]),
        running_features=np.zeros((3, 1)),
        running_elapsed=np.array([90.0, 90.0, 90.0]),
    )
    method.predict(cp)
    assert method.resume_attempts() == method.chosen_attempts


# ---- one kill delay, R_min 0.1, theta C scaled to the job ----------------------------------


@pytest.mark.parametrize("interval,setting", [(60.0, None), (300.0, None), (60.0, 120.0)])
def test_methods_and_simulator_share_one_kill_delay(interval, setting):
    """tau_kill - tau_est that SRQuant and LASER model is the one the simulator's resume policy
    applies: simulation.policies.kill_delay, or one checkpoint interval when it is null."""
    from jobfactory import LAST, make_job

    from stragglers.methods import get_method
    from stragglers.replay.core import ReplaySettings
    from stragglers.replay.runner import replay_job
    from stragglers.simulate import policies

    settings = ReplaySettings(grid_origin=600.0, checkpoint_interval=interval, kill_delay=setting)
    expected = interval if setting is None else setting
    job = make_job(40, seed=2, step=interval)
    for name, params in (("SRQuant", {}), ("LASER", {"epochs": 5})):
        method = get_method(name)(params)
        replay_job(job, method, settings, LAST, seed=1)
        assert method.job.kill_delay == expected
        if name == "SRQuant":
            assert method.kill_delay() == expected
    # the simulator, given the same setting and grid: t2 is flagged at 600 s, its two attempts
    # take 360 s and 270 s of remaining work; the loser runs min(270, kill delay) (hand)
    start, end = np.zeros(3), np.array([300.0, 600.0, 1500.0])
    flag = np.array([np.nan, np.nan, 600.0])
    durations = np.array([[[100.0, 100.0, 600.0]], [[100.0, 100.0, 450.0]]])
    _, machine = policies.simulate_policy(
        "resume",
        start,
        end,
        flag,
        durations,
        resume_attempts=2,
        grid_origin=0.0,
        checkpoint_interval=interval,
        kill_delay=setting,
    )
    np.testing.assert_allclose(machine, [[300 + 600 + 600 + 270 + min(270.0, expected)]])
    # and the workflow hands both rules the one setting
    from pathlib import Path

    rules = Path(__file__).parents[1] / "workflow" / "rules"
    predict = (rules / "predict.smk").read_text()
    simulate_rules = (rules / "simulate.smk").read_text()
    assert predict.count("kill_delay=resume_kill_delay()") == 2  # predict, tune_method
    assert "kill_delay=resume_kill_delay()" in simulate_rules


def test_srquant_follows_the_paper_by_default():
    from stragglers.methods.base import default_values

    defaults = default_values(SRQuant.defaults)
    assert defaults["pocd_min"] == 0.1  # the LASER paper, §V: R_min = 0.1
    assert defaults["theta_cost"] == 1e-4 and defaults["theta_scaling"] == "job"


def test_job_scaled_theta_by_hand():
    from stragglers.methods._srquant_model import scaled_theta

    # a job of the paper's size keeps 1e-4; one of 164,000 machine-seconds gets 1e-6
    assert scaled_theta(1e-4, "job", 1640.0) == pytest.approx(1e-4)
    assert scaled_theta(1e-4, "job", 164_000.0) == pytest.approx(1e-6)
    assert scaled_theta(1e-4, "literal", 164_000.0) == 1e-4
    assert scaled_theta(1e-4, "job", float("inf")) == 1e-4  # no usable E_0: literal
    with pytest.raises(ValueError, match="theta_scaling"):
        scaled_theta(1e-4, "per-task", 1.0)


def test_job_scaled_theta_weighs_machine_time_as_the_papers_job_did():
    """200 tasks: E_0(T) ~ 29,000 s, 18x the paper's job. With the literal 1e-4 the cost term
    outweighs the PoCD gain R(1) - R(0) = 0.003 (r = 0); scaled, U(r) - U(0) is the paper's trade-off: the cost term is
    0.164 x E_r / E_0, checked by hand against the utilities."""
    args = dict(
        n_tasks=200,
        t_min=100.0,
        beta=3.0,
        deadline=600.0,
        tau_est=200.0,
        phi_est=0.4,
        kill_delay=60.0,
    )
    e0 = expected_machine_time(0, **args)
    assert e0 > 10 * 1640
    theta = 1e-4 * 1640.0 / e0
    r_job, u_job = choose_attempts(**args, r_max=5, pocd_min=0.1, theta_cost=theta)
    r_lit, _ = choose_attempts(**args, r_max=5, pocd_min=0.1, theta_cost=1e-4)
    for r in range(6):
        gap = pocd(r, **{k: v for k, v in args.items() if k != "kill_delay"}) - 0.1
        cost = 0.164 * expected_machine_time(r, **args) / e0
        assert u_job[r] == pytest.approx(np.log(gap) - cost)
    assert r_lit == 0 and r_job > 0
