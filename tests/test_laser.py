"""LASER (stragglers/methods/laser.py, _laser_model.py): networks, Algorithm 2, the method."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from jobfactory import FEATURES as FACTORY_FEATURES
from jobfactory import (
    LAST,
    RecordingHistory,
    make_job,
    make_job_frame,
    register_test_kind,
    write_jobs,
)

from stragglers.formats.jobs import job_from_frame
from stragglers.methods import Checkpoint, JobInfo, get_method
from stragglers.methods._laser_model import (
    choose_attempts,
    fit_regressor,
    predict_regressor,
    simulate_resume,
    task_training_set,
)
from stragglers.replay.core import ReplaySettings
from stragglers.replay.history import JobHistory
from stragglers.replay.runner import replay_job, run_method_on_jobs
from stragglers.replay.wallclock import iterate_checkpoints

FEATURES = ["cpu_rate", "io", "noise", "evictions_so_far"]


def test_registry_and_family():
    cls = get_method("LASER")
    assert cls.family == "Schedulers" and not cls.privileged
    with pytest.raises(ValueError):
        cls({"depth": 3})
    with pytest.raises(ValueError, match="'hidden_layers' must be an integer >= 1, got 0"):
        cls({"hidden_layers": 0})


def test_network_learns_a_known_relation_better_than_the_mean():
    """y = 100 + 80 x0 + 40 |x1| + noise: held-out L1 error well below predicting the median."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1200, 3))
    y = 100 + 80 * x[:, 0] + 40 * np.abs(x[:, 1]) + rng.normal(0, 5, len(x))
    train, test = slice(0, 900), slice(900, None)
    model = fit_regressor(
        x[train], y[train] / 100, hidden_layers=3, width=32, epochs=300, learning_rate=0.01, seed=1
    )
    error = np.abs(predict_regressor(model, x[test])[:, 0] * 100 - y[test]).mean()
    baseline = np.abs(np.median(y[train]) - y[test]).mean()
    assert error < 0.3 * baseline


def test_fit_is_deterministic_and_leaves_torch_settings_alone():
    import torch

    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(200, 2)), rng.normal(size=200)
    threads = torch.get_num_threads()
    first = predict_regressor(fit_regressor(x, y, 1, 8, 50, 0.01, seed=5), x)
    second = predict_regressor(fit_regressor(x, y, 1, 8, 50, 0.01, seed=5), x)
    np.testing.assert_array_equal(first, second)
    assert torch.get_num_threads() == threads
    assert not torch.are_deterministic_algorithms_enabled()
    with pytest.raises(ValueError, match="finite"):
        fit_regressor(np.array([[np.nan]]), np.array([1.0]), 1, 4, 1, 0.01, 0)


def test_task_training_set_by_hand():
    inputs, targets = task_training_set(
        finished_features=np.array([[1.0], [2.0]]),
        finished_latency=np.array([100.0, 200.0]),
        elapsed_fractions=np.array([0.5]),
        snapshot_features=np.array([[3.0]]),
        snapshot_elapsed=np.array([40.0]),
        snapshot_latency=np.array([300.0]),
    )
    np.testing.assert_array_equal(inputs, [[1.0, 50.0], [2.0, 100.0], [3.0, 40.0]])
    np.testing.assert_array_equal(targets, [100.0, 200.0, 300.0])


def test_algorithm_2_by_hand():
    # r = 0 misses D = 100; r = 1 and 2 meet it; r = 1 is cheaper: U = 1 - 1e-3 * 500
    job_time = np.array([120.0, 95.0, 90.0])
    machine = np.array([400.0, 500.0, 700.0])
    r, utility = choose_attempts(job_time, machine, 100.0, 1e-3)
    np.testing.assert_allclose(utility, [-0.4, 0.5, 0.3])
    assert r == 1
    # cost dominates: meeting the deadline is not worth it
    assert choose_attempts(job_time, machine, 100.0, 1e-2)[0] == 0
    # ties keep the smallest r
    assert choose_attempts(np.array([90.0, 90.0]), np.array([5.0, 5.0]), 100.0, 0.1)[0] == 0


def test_simulated_resume_by_hand():
    """One straggler (estimate 400 > D = 300, elapsed 100: 3/4 of its work left), one normal
    task (estimate 200). Every finished latency is 80 s: an attempt takes 60 s."""
    rng = np.random.default_rng(0)
    job_time, machine = simulate_resume(
        r=2,
        elapsed=np.array([100.0, 50.0]),
        estimate=np.array([400.0, 200.0]),
        deadline=300.0,
        finished_latency=np.array([80.0]),
        kill_delay=30.0,
        n_draws=3,
        rng=rng,
    )
    np.testing.assert_allclose(job_time, 200.0)  # 100 + 60 = 160 < the normal task's 200
    np.testing.assert_allclose(machine, 160.0 + 2 * 30.0 + 200.0)  # losers stop at tau_kill


def _flags_until(frame, method, tau, t_stop):
    """Drive the replay's checkpoints with a fixed tau; flag times of flags raised by t_stop."""
    job = job_from_frame("j", frame, FEATURES)
    method.start_job(
        JobInfo(
            job_id="j",
            n_tasks=job.n_tasks,
            feature_names=tuple(FEATURES),
            straggler_threshold=tau,
            seed=3,
            kill_delay=ReplaySettings().resume_kill_delay,
        )
    )
    flagged = np.zeros(job.n_tasks, dtype=bool)
    flag_time = np.full(job.n_tasks, np.nan)
    attempts = []
    for cp in iterate_checkpoints(
        job, ReplaySettings(), LAST, flagged, np.zeros(job.n_tasks, dtype=bool)
    ):
        if cp.time > t_stop:
            break
        assert not hasattr(cp, "running_latency")
        chosen = cp.running_tasks[method.predict(cp)]
        flagged[chosen] = True
        flag_time[chosen] = cp.time
        if chosen.size:
            attempts.append(method.resume_attempts())
    return flag_time, attempts


def _job_frame():
    frame = make_job_frame(150, seed=11).rename(columns={"cpu": "cpu_rate"})
    frame["cpu_rate"] = frame["cpu_rate"].clip(lower=0.01)
    return frame


def test_never_sees_a_running_tasks_latency():
    """Lengthen every task still running at t and change every window after t: flags and r
    raised up to t stay the same."""
    frame = _job_frame()
    latency = frame.groupby("task")["latency"].first().to_numpy()
    tau = float(np.quantile(latency, 0.9))
    t = float(np.quantile(frame.groupby("task")["task_end"].first(), 0.95)) // 300 * 300 + 600
    params = {"epochs": 60, "refit_every": 3}
    before, r_before = _flags_until(frame, get_method("LASER")(params), tau, t)
    future = frame.copy()
    later = future["available_from"] > t
    future.loc[later, ["cpu_rate", "io", "noise"]] = 5.0
    running = future["task_end"] > t
    future.loc[running, ["task_end", "latency"]] += 4000.0
    after, r_after = _flags_until(future, get_method("LASER")(params), tau, t)
    assert np.isfinite(before).sum() > 0  # the test is not vacuous
    np.testing.assert_array_equal(before, after)
    assert r_before == r_after


def test_deterministic_and_r_reaches_the_replay():
    job = make_job(120, seed=4)
    params = {"epochs": 60, "refit_every": 3}
    runs = [
        replay_job(job, get_method("LASER")(params), ReplaySettings(), LAST, seed=9)
        for _ in range(2)
    ]
    np.testing.assert_array_equal(runs[0].flag_time, runs[1].flag_time)
    np.testing.assert_array_equal(runs[0].resume_attempts, runs[1].resume_attempts)
    flagged = np.isfinite(runs[0].flag_time)
    assert flagged.any()
    attempts = runs[0].resume_attempts[flagged]
    assert np.isfinite(attempts).all() and ((attempts >= 1) & (attempts <= 6)).all()
    assert np.isnan(runs[0].resume_attempts[~flagged]).all()


def test_method_flags_estimates_past_the_deadline():
    """Finished tasks: latency = 100 s x io. A running task with io 3 is estimated near 300 s
    and flagged against D = 200; one with io 1 is not."""
    rng = np.random.default_rng(3)
    io = rng.uniform(0.5, 3.5, 60)
    method = get_method("LASER")({"epochs": 300})
    method.start_job(JobInfo("j", 62, ("io",), straggler_threshold=200.0, seed=0, kill_delay=300.0))
    cp = Checkpoint(
        time=500.0,
        index=3,
        first_prediction=True,
        finished_tasks=np.arange(60),
        finished_features=io[:, None],
        finished_latency=100.0 * io,
        running_tasks=np.array([60, 61]),
        running_features=np.array([[3.0], [1.0]]),
        running_elapsed=np.array([60.0, 60.0]),
    )
    np.testing.assert_array_equal(method.predict(cp), [True, False])
    assert 1 <= method.resume_attempts() <= 6


@pytest.mark.parametrize("key", ["min_finished", "simulation_draws", "snapshots_per_checkpoint"])
def test_rejects_non_positive_counts(key):
    with pytest.raises(ValueError, match=f"{key}' must be an integer >= 1"):
        get_method("LASER")({key: 0})


def test_snapshots_per_checkpoint_bounds_memory():
    method = get_method("LASER")({"snapshots_per_checkpoint": 2, "min_finished": 50})
    method.start_job(JobInfo("j", 10, ("x",), straggler_threshold=100.0, seed=0))
    cp = Checkpoint(
        time=50.0,
        index=1,
        first_prediction=True,
        finished_tasks=np.array([0]),
        finished_features=np.zeros((1, 1)),
        finished_latency=np.array([40.0]),
        running_tasks=np.arange(1, 6),
        running_features=np.zeros((5, 1)),
        running_elapsed=np.full(5, 30.0),
    )
    assert not method.predict(cp).any()  # fewer than min_finished finished: nothing flagged
    assert len(method._snapshot_task) == 1 and len(method._snapshot_task[0]) == 2


# ---- training on earlier jobs (history_jobs > 0) --------------------------------------------


@pytest.fixture()
def earlier_trace(tmp_path, monkeypatch):
    import stragglers.methods.laser as laser

    monkeypatch.setattr(laser, "_earlier_examples", {})
    register_test_kind(monkeypatch)
    return tmp_path, write_jobs(tmp_path, n_jobs=5, n_tasks=50)


def test_earlier_job_examples_by_hand():
    """Final features at elapsed = f x latency, elapsed and target over the job's median."""
    from stragglers.methods.laser import earlier_job_examples

    job = make_job(9, seed=2)
    inputs, targets = earlier_job_examples(job, LAST, np.array([0.5, 1.0]))
    median = float(np.median(job.latency))
    np.testing.assert_allclose(targets, np.repeat(job.latency / median, 2))
    np.testing.assert_allclose(inputs[:, -1], np.outer(job.latency / median, [0.5, 1.0]).ravel())
    assert inputs.shape == (18, len(FACTORY_FEATURES) + 1)


def test_history_jobs_are_finished_by_the_checkpoint_and_used(earlier_trace):
    folder, manifest = earlier_trace
    history = RecordingHistory(manifest, folder, "test", seed=1)
    jobs = [
        job_from_frame(r.job_id, pd.read_parquet(folder / r.path), FACTORY_FEATURES)
        for r in manifest.itertuples()
    ]
    params = {"epochs": 30, "refit_every": 3, "history_jobs": 2}
    tasks, job_rows = run_method_on_jobs(
        iter(jobs),
        get_method("LASER"),
        params,
        ReplaySettings(grid_origin=600.0),
        LAST,
        7,
        "t",
        history=history,
    )
    assert (job_rows["status"] == "ok").all(), job_rows["reason"].tolist()
    assert history.loaded, "later jobs should train on earlier ones"
    ends = dict(zip(manifest["job_id"], manifest["job_end"]))
    for job_id, time in history.loaded:
        assert time is not None and ends[job_id] <= time
    assert len({job_id for job_id, _ in history.loaded}) <= 4  # never the last job


def test_history_jobs_change_the_model_and_zero_needs_no_history(earlier_trace):
    folder, manifest = earlier_trace
    history = JobHistory(manifest, folder, "test", seed=1)
    last = manifest.iloc[-1]
    job = job_from_frame(last.job_id, pd.read_parquet(folder / last.path), FACTORY_FEATURES)
    settings = ReplaySettings(grid_origin=600.0)
    alone = replay_job(job, get_method("LASER")({"epochs": 30}), settings, LAST, seed=9)
    without = replay_job(
        job, get_method("LASER")({"epochs": 30}), settings, LAST, seed=9, history=history
    )
    np.testing.assert_array_equal(alone.flag_time, without.flag_time)  # history unused at 0
    method = get_method("LASER")({"epochs": 30, "history_jobs": 4})
    replay_job(job, method, settings, LAST, seed=9, history=history)
    assert method.history_jobs_used == 4
    with pytest.raises(ValueError, match="job history"):
        replay_job(
            job, get_method("LASER")({"epochs": 30, "history_jobs": 1}), settings, LAST, seed=9
        )


def test_rejects_negative_history_jobs():
    with pytest.raises(ValueError, match="history_jobs"):
        get_method("LASER")({"history_jobs": -1}).start_job(JobInfo("j", 3, ("x",), 10.0, 0))
