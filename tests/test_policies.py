"""Mitigation policies: hand-computed JCT, PoCD and machine time; relaunch = Algorithms 2-3."""

import numpy as np
import pandas as pd
import pytest

from stragglers.simulate import policies
from stragglers.simulate.jct import (
    mitigated_jct_limited,
    mitigated_jct_unlimited,
    replacement_durations,
    replacement_uniforms,
)

# t0 [0,300), t1 [0,600), t2 [0,1500) flagged at 600; tau = 600 -> reference JCT 600
START = np.array([0.0, 0.0, 0.0])
END = np.array([300.0, 600.0, 1500.0])
FLAG = np.array([np.nan, np.nan, 600.0])
# full-task draws: attempt 0 -> 600 s, attempt 1 -> 450 s for t2 (one repeat)
DURATIONS = np.array([[[100.0, 100.0, 600.0]], [[100.0, 100.0, 450.0]]])


def run(policy, machines=(None,), attempts=2):
    return policies.simulate_policy(
        policy,
        START,
        END,
        FLAG,
        DURATIONS,
        machines=machines,
        resume_attempts=attempts,
        grid_origin=0.0,
    )


def test_hand_made_job_unlimited():
    # relaunch: killed at 600, new copy 600 s -> ends 1200; machine 300+600+600+600
    assert run("relaunch") == (np.array([[1200.0]]), np.array([[2100.0]]))
    # copy: original keeps running to 1200 (then killed), copy 600 s; machine 300+600+1200+600
    assert run("copy") == (np.array([[1200.0]]), np.array([[2700.0]]))
    # resume, 2 attempts: remaining share 900/1500 = 0.6 -> 360 s and 270 s; fastest ends 870;
    # the loser is killed at 870 (< tau_kill = 900): machine 300+600+600+270+270
    jct, machine = run("resume")
    np.testing.assert_allclose(jct, [[870.0]])
    np.testing.assert_allclose(machine, [[2040.0]])
    # resume, 1 attempt: 360 s of remaining work
    jct, machine = run("resume", attempts=1)
    np.testing.assert_allclose(jct, [[960.0]])
    np.testing.assert_allclose(machine, [[1860.0]])


def test_kill_at_tau_kill():
    # a loser slower than tau_kill - tau_est is killed at tau_kill: kill_delay 100
    jct, machine = policies.simulate_policy(
        "resume", START, END, FLAG, DURATIONS, resume_attempts=2, kill_delay=100.0
    )
    np.testing.assert_allclose(jct, [[870.0]])
    np.testing.assert_allclose(machine, [[300 + 600 + 600 + 270 + 100]])


def test_hand_made_job_limited():
    # m=2: at 600 only t2 runs, free 1: relaunch is served, resume (needs 2) waits forever
    jct, machine = run("relaunch", machines=(2,))
    assert (jct, machine) == (np.array([[1200.0]]), np.array([[2100.0]]))
    jct, machine = run("resume", machines=(2, 3))
    np.testing.assert_allclose(jct, [[1500.0], [870.0]])
    np.testing.assert_allclose(machine, [[2400.0], [2040.0]])
    # m=1: t2 occupies the only machine: nothing happens
    assert run("copy", machines=(1,)) == (np.array([[1500.0]]), np.array([[2400.0]]))


def test_pocd_and_machine_time_table():
    frame = policies.simulate_job_policies(
        START, END, FLAG, DURATIONS, straggler_threshold=600.0, grid_origin=0.0, resume_attempts=2
    )
    frame.insert(0, "job_id", "j")
    frame.insert(0, "method", "M")
    table = policies.pocd_summary(frame, [1.0, 1.5, 2.0]).set_index(["method", "policy"])
    # reference JCT 600: deadlines 600, 900, 1200
    assert table.loc[("Hadoop-NS", "none"), ["pocd_1", "pocd_1.5", "pocd_2"]].tolist() == [0, 0, 0]
    assert table.loc[("M", "relaunch"), ["pocd_1", "pocd_1.5", "pocd_2"]].tolist() == [0, 0, 1]
    assert table.loc[("M", "resume"), ["pocd_1", "pocd_1.5", "pocd_2"]].tolist() == [0, 1, 1]
    assert table.loc[("M", "copy"), "machine_time_rel"] == pytest.approx(2700 / 2400)
    assert table.loc[("M", "relaunch"), "reduction"] == pytest.approx(0.2)
    assert table.loc[("M", "resume"), "reduction"] == pytest.approx(1 - 870 / 1500)


def test_reference_jct():
    assert policies.reference_jct(START, END, 600.0) == 600.0
    assert policies.reference_jct(np.array([100.0, 0.0]), np.array([200.0, 50.0]), 10.0) == 110.0


def test_relaunch_matches_algorithms_2_and_3():
    rng = np.random.default_rng(3)
    for j in range(60):
        n = int(rng.integers(1, 15))
        start = rng.integers(0, 6, n) * 100.0
        end = start + rng.integers(1, 12, n) * 100.0
        first = np.ceil(start / 300.0)
        last = np.ceil(end / 300.0) - 1
        pick = (rng.random(n) < 0.5) & (last >= first)
        k = first + np.floor(rng.random(n) * (last - first + 1))
        flag = np.where(pick, k * 300.0, np.nan)
        dur = policies.attempt_durations(f"j{j}", end - start, 3, 2, seed=1)
        machines = [0, 1, 2, 4, 8, 40]
        jct, _ = policies.simulate_policy(
            "relaunch", start, end, flag, dur, machines=[None, *machines], grid_origin=0.0
        )
        _, unlimited = mitigated_jct_unlimited(start, end, flag, dur[0])
        _, limited = mitigated_jct_limited(start, end, flag, dur[0], machines, 0.0)
        np.testing.assert_allclose(jct[0], unlimited)
        np.testing.assert_allclose(jct[1:], limited)
        # copy never ends a task later than the original; resume <= relaunch of remaining work
        jct_copy, _ = policies.simulate_policy("copy", start, end, flag, dur, grid_origin=0.0)
        assert np.all(jct_copy <= end.max() - start.min() + 1e-9)


def test_attempt_zero_is_the_relaunch_draw():
    latency = np.arange(1.0, 11.0)
    dur = policies.attempt_durations("job", latency, 2, 3, seed=7)
    expected = replacement_durations(latency, replacement_uniforms("job", 10, 2, 7))
    np.testing.assert_array_equal(dur[0], expected)
    assert dur.shape == (3, 2, 10)


def test_bad_policy_and_attempts():
    with pytest.raises(ValueError, match="unknown policy"):
        run("clone")
    with pytest.raises(ValueError, match="resume_attempts"):
        run("resume", attempts=3)


def test_per_task_attempts_and_their_validation():
    per_task = np.array([1, 1, 2])
    np.testing.assert_allclose(run("resume", attempts=per_task)[0], run("resume")[0])
    np.testing.assert_allclose(run("resume", attempts=np.array([5, 5, 1]))[0], [[960.0]])


def test_replay_writes_the_chosen_attempts_and_evaluation_checks_them():
    from stragglers.evaluate.metrics import validate_predictions
    from stragglers.formats.predictions import empty_tasks_frame

    assert "resume_attempts" in empty_tasks_frame()
    tasks = pd.DataFrame(
        {
            "dataset": "d",
            "method": "M",
            "job_id": "j",
            "task": [0, 1],
            "latency": [1.0, 9.0],
            "task_start": 0.0,
            "task_end": [1.0, 9.0],
            "is_straggler": [False, True],
            "evaluated": True,
            "flagged": [True, False],
            "flag_time": [0.0, np.nan],
            "resume_attempts": [2.0, 3.0],
        }
    )
    jobs = pd.DataFrame(
        {
            "dataset": ["d"],
            "method": "M",
            "family": "F",
            "privileged": False,
            "job_id": "j",
            "status": "ok",
            "reason": "",
            "seconds": 0.0,
            "n_checkpoints": 1,
            "straggler_threshold": 5.0,
            "job_start": 0.0,
            "job_end": 9.0,
            "prediction_start": 0.0,
        }
    )
    with pytest.raises(ValueError, match="resume_attempts"):
        validate_predictions(tasks, jobs)
    tasks["resume_attempts"] = [2.0, np.nan]
    validate_predictions(tasks, jobs)
