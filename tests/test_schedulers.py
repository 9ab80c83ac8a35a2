"""The schedulers' rules as methods: Elapsed and LATE (family "Schedulers")."""

from __future__ import annotations

import numpy as np
import pytest
from jobfactory import LAST, make_job_frame

from stragglers.formats.jobs import job_from_frame
from stragglers.methods import Checkpoint, JobInfo, get_method
from stragglers.methods.late import late_selection, speculation_cap
from stragglers.replay.core import ReplaySettings
from stragglers.replay.wallclock import iterate_checkpoints

FEATURES = ["cpu_rate", "io", "noise", "evictions_so_far"]


def info(n_tasks: int, tau: float = 1000.0, names=("cpu_rate",)) -> JobInfo:
    return JobInfo(
        job_id="hand", n_tasks=n_tasks, feature_names=tuple(names), straggler_threshold=tau, seed=1
    )


def checkpoint(running, cpu, elapsed, finished=(100, 101, 102), time=1000.0, index=0):
    """Finished tasks did 1.0 CPU x 100 s = 100 CPU-seconds each (the reference work)."""
    finished = np.asarray(finished)
    running = np.asarray(running)
    return Checkpoint(
        time=time,
        index=index,
        first_prediction=index == 0,
        finished_tasks=finished,
        finished_features=np.ones((len(finished), 1)),
        finished_latency=np.full(len(finished), 100.0),
        running_tasks=running,
        running_features=np.asarray(cpu, dtype=float)[:, None],
        running_elapsed=np.asarray(elapsed, dtype=float),
    )


def test_registry_and_family():
    for name in ("Elapsed", "LATE"):
        cls = get_method(name)
        assert cls.family == "Schedulers" and not cls.privileged


def test_elapsed_flags_exactly_at_tau():
    method = get_method("Elapsed")()
    method.start_job(info(10, tau=300.0))
    cp = checkpoint([0, 1, 2, 3], [1, 1, 1, 1], [299.0, 300.0, 301.0, 10.0])
    np.testing.assert_array_equal(method.predict(cp), [False, True, True, False])


def test_late_selection_by_hand():
    # rates = progress / elapsed = 0.001, 0.0005, 0.004, 0.009; their median is 0.0025, so
    # tasks 0 and 1 are slow; time left = (1 - p) / rate = 900 s and 400 s: task 0 goes first
    # although task 1 is slower
    progress = np.array([0.1, 0.8, 0.2, 0.9])
    elapsed = np.array([100.0, 1600.0, 50.0, 100.0])
    np.testing.assert_array_equal(
        late_selection(progress, elapsed, 1, 50.0), [True, False, False, False]
    )
    np.testing.assert_array_equal(
        late_selection(progress, elapsed, 5, 50.0), [True, True, False, False]
    )
    # 25th percentile (LATE's default): 0.0005 + 0.75 * 0.0005 = 0.000875 -> task 1 only
    np.testing.assert_array_equal(
        late_selection(progress, elapsed, 5, 25.0), [False, True, False, False]
    )
    # tasks that ran less than min_elapsed are not candidates
    np.testing.assert_array_equal(
        late_selection(progress, elapsed, 5, 50.0, min_elapsed=200.0), [False, True, False, False]
    )
    # no free slot: nothing; progress 0 = infinite time left, chosen first
    assert not late_selection(progress, elapsed, 0, 50.0).any()
    np.testing.assert_array_equal(
        late_selection(np.array([0.0, 0.1, 0.5, 0.9]), np.full(4, 100.0), 1, 50.0),
        [True, False, False, False],
    )


def test_speculation_cap():
    assert speculation_cap(20, 0.1) == 2
    assert speculation_cap(109, 0.1) == 10
    assert speculation_cap(5, 0.1) == 1  # at least one copy


def test_late_through_checkpoints_respects_the_cap():
    """20 tasks: cap 2. Elapsed 100 s everywhere; progress = cpu (reference work 100 CPU-s)."""
    method = get_method("LATE")()
    method.start_job(info(20))
    cpu = [0.1, 0.2, 0.3, 0.5, 0.8, 0.9, 0.95, 1.0]
    # rates cpu/100; 25th percentile (linear) = 0.275/100 -> tasks 0 (cpu 0.1) and 1 (0.2)
    first = method.predict(checkpoint(np.arange(8), cpu, np.full(8, 100.0)))
    np.testing.assert_array_equal(first, [True, True] + [False] * 6)
    # both copies still running (tasks 0, 1 not finished): cap full, nothing more
    second = method.predict(checkpoint(np.arange(2, 8), cpu[2:], np.full(6, 200.0), index=1))
    assert not second.any()
    # task 0 finished: one slot frees; the slowest of the rest (task 2, cpu 0.3) is chosen
    cp = checkpoint(
        np.arange(2, 8), cpu[2:], np.full(6, 300.0), finished=(0, 100, 101, 102), index=2
    )
    np.testing.assert_array_equal(method.predict(cp), [True] + [False] * 5)
    assert method.active_speculations(cp) == 2


def test_late_without_progress_signal_is_a_clock_rule():
    """Equal rates (the events-only dataset's CPU request): progress = elapsed / median
    finished latency (100 s). Tasks below it all have the same rate: none is slow. Tasks past
    it are capped at progress 1 (time left 0) with rate 1 / elapsed: they are the slow ones,
    the longest-running first."""
    method = get_method("LATE")()
    method.start_job(info(20, names=("cpu_request",)))
    assert not method.predict(checkpoint(np.arange(8), np.full(8, 0.5), np.full(8, 90.0))).any()
    method = get_method("LATE")()
    method.start_job(info(10, names=("cpu_request",)))  # cap: 1 speculation
    elapsed = [50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 150.0, 300.0]
    flags = method.predict(checkpoint(np.arange(8), np.full(8, 0.5), elapsed))
    np.testing.assert_array_equal(flags, [False] * 7 + [True])


@pytest.mark.parametrize(
    "params",
    [{"speculative_cap": 0}, {"slow_task_percentile": 0}, {"min_elapsed": -1}, {"cap": 0.1}],
)
def test_late_rejects_bad_settings(params):
    with pytest.raises(ValueError):
        get_method("LATE")(params)


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
        )
    )
    flagged = np.zeros(job.n_tasks, dtype=bool)
    flag_time = np.full(job.n_tasks, np.nan)
    for cp in iterate_checkpoints(
        job, ReplaySettings(), LAST, flagged, np.zeros(job.n_tasks, dtype=bool)
    ):
        if cp.time > t_stop:
            break
        assert not hasattr(cp, "running_latency")
        chosen = cp.running_tasks[method.predict(cp)]
        flagged[chosen] = True
        flag_time[chosen] = cp.time
    return flag_time


@pytest.mark.parametrize("name", ["Elapsed", "LATE"])
def test_methods_never_see_a_running_tasks_latency(name):
    """Lengthen every task still running at t and change every window after t: flags raised
    up to t stay the same (tau held fixed: it is the operator's input, not a prediction)."""
    frame = make_job_frame(150, seed=11).rename(columns={"cpu": "cpu_rate"})
    frame["cpu_rate"] = frame["cpu_rate"].clip(lower=0.01)
    latency = frame.groupby("task")["latency"].first().to_numpy()
    tau = float(np.quantile(latency, 0.9))
    t = float(np.quantile(frame.groupby("task")["task_end"].first(), 0.95)) // 300 * 300 + 600
    before = _flags_until(frame, get_method(name)(), tau, t)
    future = frame.copy()
    later = future["available_from"] > t
    future.loc[later, ["cpu_rate", "io", "noise"]] = 5.0
    running = future["task_end"] > t
    future.loc[running, ["task_end", "latency"]] += 4000.0
    after = _flags_until(future, get_method(name)(), tau, t)
    assert np.isfinite(before).sum() > 0  # the test is not vacuous
    np.testing.assert_array_equal(before, after)
