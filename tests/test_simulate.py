"""Tests for stragglers.simulate: hand-computed jobs, a slow reference model, properties."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stragglers.simulate.jct import (
    DEFAULT_MACHINES,
    RESULT_COLUMNS,
    mitigated_jct_limited,
    replacement_durations,
    replacement_uniforms,
    simulate_job,
    simulate_limited,
    simulate_unlimited,
)

NAN = np.nan
INTERVAL = 100.0


def job(ends, flags, starts=None):
    ends = np.asarray(ends, dtype=float)
    starts = np.zeros_like(ends) if starts is None else np.asarray(starts, dtype=float)
    return starts, ends, np.asarray(flags, dtype=float)


# ----------------------------------------------------------------------------- reference model


def reference_limited_jct(start, end, flag, replacement_row, m, origin, interval):
    """Algorithm 3 as written in docs/simulation.md, one task at a time, every checkpoint."""
    n = len(start)
    flagged = [i for i in range(n) if not math.isnan(flag[i])]
    if not flagged:
        return max(end) - min(start)
    flag_k = {i: round((flag[i] - origin) / interval) for i in flagged}
    original_end = list(end)
    copy = {}  # task -> (copy start, copy end)
    k = min(flag_k.values())
    while origin + k * interval < max(end):  # after the last original end nobody can wait
        c = origin + k * interval
        running = sum(start[i] <= c < original_end[i] for i in range(n))
        running += sum(s <= c < e for s, e in copy.values())
        free = max(0, m - running)
        queue = sorted(
            (i for i in flagged if flag_k[i] <= k and i not in copy and end[i] > c),
            key=lambda i: (flag_k[i], i),
        )
        for i in queue[:free]:
            original_end[i] = c
            copy[i] = (c, c + replacement_row[i])
        k += 1
    final = [copy[i][1] if i in copy else end[i] for i in range(n)]
    return max(final) - min(start)


@st.composite
def jobs(draw, max_tasks=7, max_repeats=2, helpful=False):
    """Small jobs on an integer grid (many exact ties between ends and checkpoints)."""
    n = draw(st.integers(1, max_tasks))
    n_repeats = draw(st.integers(1, max_repeats))
    origin = draw(st.sampled_from([0.0, 5.0, -30.0]))
    interval = 10.0
    start = np.array(draw(st.lists(st.integers(0, 60), min_size=n, max_size=n)), dtype=float)
    latency = np.array(draw(st.lists(st.integers(0, 90), min_size=n, max_size=n)), dtype=float)
    end = start + latency
    flag = np.full(n, NAN)
    picks = draw(st.lists(st.integers(-1, 20), min_size=n, max_size=n))
    for i, pick in enumerate(picks):
        first = math.ceil((start[i] - origin) / interval)
        last = math.ceil((end[i] - origin) / interval) - 1  # last grid point < end
        if pick >= 0 and last >= first:
            flag[i] = origin + (first + pick % (last - first + 1)) * interval
    if helpful:
        # Every relaunch the model can make shortens the task: r <= end - last checkpoint < end.
        slack = end - (origin + (np.ceil((end - origin) / interval) - 1) * interval)
        size = n * n_repeats
        fractions = draw(st.lists(st.integers(0, 4), min_size=size, max_size=size))
        replacement = np.array(fractions, dtype=float).reshape(n_repeats, n) / 4 * slack
    else:
        values = draw(st.lists(st.integers(0, 100), min_size=n * n_repeats, max_size=n * n_repeats))
        replacement = np.array(values, dtype=float).reshape(n_repeats, n)
    return start, end, flag, replacement, origin, interval


# ----------------------------------------------------------------------------- hand-made jobs


def test_unlimited_hand_computed():
    start, end, flag = job([100, 200, 1000], [NAN, NAN, 300])
    replacement = np.array([[0, 0, 150], [0, 0, 900]], dtype=float)
    # repeat 0: task 2 ends 300 + 150 = 450; repeat 1: 300 + 900 = 1200 (worse than 1000).
    np.testing.assert_allclose(simulate_unlimited(start, end, flag, replacement), [0.55, -0.2])


def test_limited_relaunches_at_once_when_a_machine_is_free():
    start, end, flag = job([100, 200, 1000], [NAN, NAN, 300])
    replacement = np.array([[0, 0, 150], [0, 0, 900]], dtype=float)
    # At 300 only task 2 runs: 1 machine in use. m=1: no free machine, it runs to 1000.
    got = simulate_limited(start, end, flag, replacement, [1, 2, 3], 0.0, INTERVAL)
    np.testing.assert_allclose(got, [[0.0, 0.0], [0.55, -0.2], [0.55, -0.2]])


def test_limited_waits_for_a_machine():
    # A [0,450), B [0,1000) flagged at 100, C [0,600); B's copy takes 200 s.
    start, end, flag = job([450, 1000, 600], [NAN, 100, NAN])
    replacement = np.array([[0, 200, 0]], dtype=float)
    got = simulate_limited(start, end, flag, replacement, [2, 3, 4], 0.0, INTERVAL)
    # m=4: relaunch at 100 -> B ends 300, JCT 600 (as Algorithm 2).
    # m=3: 3 running at 100..400; A's machine is free from 500 -> B ends 700.
    # m=2: 2 still running at 500 (B, C); C's ends at 600 -> B ends 800.
    np.testing.assert_allclose(got[:, 0], [0.2, 0.3, 0.4])
    np.testing.assert_allclose(simulate_unlimited(start, end, flag, replacement), [0.4])


def test_limited_flagged_task_finishes_before_a_machine_frees():
    # m=2. A [0,500) frees a machine at 500, but C starts there (trace placement keeps it),
    # so B (flagged at 100) still finds none; B finishes at 1200 on its own.
    start, end, flag = job([500, 1200, 1150], [NAN, 100, NAN], starts=[0, 0, 500])
    replacement = np.array([[0, 100, 0]], dtype=float)
    base, jct = mitigated_jct_limited(start, end, flag, replacement, [2, 3], 0.0, INTERVAL)
    assert base == 1200.0
    np.testing.assert_allclose(jct[:, 0], [1200.0, 1150.0])  # m=3: B ends 200, C is last
    np.testing.assert_allclose(simulate_unlimited(start, end, flag, replacement), [50 / 1200])


def test_killed_machine_returns_only_at_next_checkpoint():
    # Both flagged at 100 with 2 of 3 machines busy: A (lower position) gets the free one;
    # A's killed original does not serve B at 100, B goes at 200.
    start, end, flag = job([2000, 2000], [100, 100])
    replacement = np.array([[50, 50]], dtype=float)
    base, jct = mitigated_jct_limited(start, end, flag, replacement, [3, 4], 0.0, INTERVAL)
    np.testing.assert_allclose(jct[:, 0], [250.0, 150.0])


def test_queue_is_served_by_flag_time_then_position():
    # A [0,450) unflagged; B flagged at 200, C flagged at 100; m=3, all busy until 500.
    # At 500 one machine: C (earlier flag) goes first, ends 600; B goes at 600, ends 700.
    start, end, flag = job([450, 2000, 2000], [NAN, 200, 100])
    replacement = np.array([[0, 100, 100]], dtype=float)
    _, jct = mitigated_jct_limited(start, end, flag, replacement, [3], 0.0, INTERVAL)
    assert jct[0, 0] == 700.0


def test_machines_equal_to_tasks_is_not_algorithm_2():
    # m >= n_tasks does not make Algorithm 3 equal Algorithm 2: with all n tasks
    # running at the flag time, the relaunch needs an (n+1)-th machine.
    start, end, flag = job([300, 300, 1000], [NAN, NAN, 100])
    replacement = np.array([[0, 0, 100]], dtype=float)
    n_tasks = 3
    unlimited = simulate_unlimited(start, end, flag, replacement)
    limited = simulate_limited(start, end, flag, replacement, [n_tasks, n_tasks + 1], 0.0, INTERVAL)
    assert unlimited[0] == pytest.approx(0.7)  # task 2 ends at 200, the job at 300
    # m = n: all busy until 300; task 2 is relaunched at 300 and ends at 400.
    np.testing.assert_allclose(limited[:, 0], [0.6, 0.7])
    assert limited[0, 0] != unlimited[0]


def test_more_machines_can_hurt():
    # Reduction is not monotone in m: with m=1 the flagged task never gets a machine and
    # ends at 400; with m=2 it is relaunched at 0 and draws a 1000 s copy.
    start, end, flag = job([400], [0])
    replacement = np.array([[1000.0]])
    got = simulate_limited(start, end, flag, replacement, [1, 2], 0.0, INTERVAL)
    np.testing.assert_allclose(got[:, 0], [0.0, -1.5])


def test_waiting_task_gets_the_killed_originals_machine_at_the_next_checkpoint():
    # m=3, A and B [0,5000) flagged at 0 and 100, C [0,100) unflagged.
    # 0: 3 running, A waits. 100: C done, 1 free; A (earlier flag) relaunched, copy 100..350.
    # 200: A's killed original has given its machine back -> B relaunched, copy 200..250.
    start, end, flag = job([5000, 5000, 100], [0, 100, NAN])
    replacement = np.array([[250, 50, 0]], dtype=float)
    _, jct = mitigated_jct_limited(start, end, flag, replacement, [3, 4, 5], 0.0, INTERVAL)
    # m=4: A at 0 (0..250), B at 100 (100..150). m=5 is the same.
    np.testing.assert_allclose(jct[:, 0], [350.0, 250.0, 250.0])


def test_waiting_tasks_retry_at_later_checkpoints():
    # m=3: A [0,5000) flagged at 0, B [0,5000) flagged at 100, C [0,50), D [0,120).
    start, end, flag = job([5000, 5000, 50, 120], [0, 100, NAN, NAN])
    replacement = np.array([[300, 60, 0, 0]], dtype=float)
    _, jct = mitigated_jct_limited(start, end, flag, replacement, [3, 5], 0.0, INTERVAL)
    # m=3: 0: 4 running. 100: A, B, D running -> 0 free. 200: D done -> A (200..500).
    # 300: A's original back -> B (300..360). JCT 500. m=5: A at 0 (..300), B at 100 (..160).
    np.testing.assert_allclose(jct[:, 0], [500.0, 300.0])


def test_no_flags_no_change_and_zero_machines():
    start, end, flag = job([100, 700, 300], [NAN, NAN, NAN], starts=[0, 50, 10])
    replacement = np.full((2, 3), 5.0)
    assert np.all(simulate_unlimited(start, end, flag, replacement) == 0.0)
    assert np.all(simulate_limited(start, end, flag, replacement, DEFAULT_MACHINES, 0.0) == 0.0)


def test_simulate_job_frame():
    start, end, flag = job([450, 1000, 600], [NAN, 100, NAN])
    replacement = np.array([[0, 200, 0], [0, 900, 0]], dtype=float)
    frame = simulate_job(
        start,
        end,
        flag,
        replacement,
        grid_origin=0.0,
        machines=[2, 3],
        checkpoint_interval=INTERVAL,
    )
    assert list(frame.columns) == RESULT_COLUMNS
    assert len(frame) == 2 + 2 * 2
    unlimited = frame[frame["algorithm"] == "unlimited"]
    assert unlimited["machines"].isna().all()
    np.testing.assert_allclose(unlimited["reduction"], [0.4, 0.0])
    limited = frame[frame["algorithm"] == "limited"]
    row = limited[(limited["machines"] == 3) & (limited["repeat"] == 0)]
    assert row["jct_mitigated"].item() == 700.0 and row["jct_base"].item() == 1000.0
    assert frame["machines"].dtype == pd.Int64Dtype()


# ----------------------------------------------------------------------------- properties


@settings(max_examples=300, deadline=None)
@given(jobs(), st.lists(st.integers(0, 12), min_size=1, max_size=4))
def test_limited_matches_reference_model(case, machines):
    start, end, flag, replacement, origin, interval = case
    base, jct = mitigated_jct_limited(start, end, flag, replacement, machines, origin, interval)
    assert base == end.max() - start.min()
    for a, m in enumerate(machines):
        for r in range(replacement.shape[0]):
            expected = reference_limited_jct(start, end, flag, replacement[r], m, origin, interval)
            assert jct[a, r] == pytest.approx(expected, abs=1e-9), (m, r)


@settings(max_examples=100, deadline=None)
@given(jobs())
def test_enough_machines_equals_algorithm_2(case):
    start, end, flag, replacement, origin, interval = case
    n_tasks, n_flagged = len(start), int(np.sum(~np.isnan(flag)))
    unlimited = simulate_unlimited(start, end, flag, replacement)
    machines = [n_tasks + n_flagged, 2 * n_tasks, 10 * n_tasks + 3]
    limited = simulate_limited(start, end, flag, replacement, machines, origin, interval)
    np.testing.assert_array_equal(limited, np.broadcast_to(unlimited, limited.shape))


@settings(max_examples=100, deadline=None)
@given(jobs())
def test_no_flags_or_no_machines_means_no_change(case):
    start, end, flag, replacement, origin, interval = case
    assert np.all(simulate_limited(start, end, flag, replacement, [0], origin, interval) == 0.0)
    no_flags = np.full_like(flag, NAN)
    assert np.all(simulate_unlimited(start, end, no_flags, replacement) == 0.0)
    limited = simulate_limited(start, end, no_flags, replacement, [0, 1, 50], origin, interval)
    assert np.all(limited == 0.0)


@settings(max_examples=100, deadline=None)
@given(jobs(), st.lists(st.integers(0, 12), min_size=2, max_size=4))
def test_batched_machine_counts_do_not_interact(case, machines):
    start, end, flag, replacement, origin, interval = case
    together = simulate_limited(start, end, flag, replacement, machines, origin, interval)
    for a, m in enumerate(machines):
        alone = simulate_limited(start, end, flag, replacement, [m], origin, interval)
        np.testing.assert_array_equal(together[a], alone[0])


@settings(max_examples=150, deadline=None)
@given(jobs(helpful=True))
def test_monotone_in_machines_when_every_relaunch_shortens_its_task(case):
    # Proved in docs/simulation.md; without this condition it fails (test_more_machines_can_hurt).
    start, end, flag, replacement, origin, interval = case
    machines = list(range(0, len(start) + 3))
    got = simulate_limited(start, end, flag, replacement, machines, origin, interval)
    assert np.all(np.diff(got, axis=0) >= -1e-12)
    unlimited = simulate_unlimited(start, end, flag, replacement)
    assert np.all(got <= unlimited + 1e-12)


# ----------------------------------------------------------------------------- random numbers


def test_replacement_uniforms_are_stable_and_keyed():
    u = replacement_uniforms("job-1", 4, 3, seed=7)
    assert u.shape == (3, 4) and np.all((u >= 0) & (u < 1))
    np.testing.assert_array_equal(u, replacement_uniforms("job-1", 4, 3, seed=7))
    assert not np.array_equal(u, replacement_uniforms("job-2", 4, 3, seed=7))
    assert not np.array_equal(u, replacement_uniforms("job-1", 4, 3, seed=8))
    # Pinned value: a change here means every published simulation result changes.
    assert replacement_uniforms("6251812952", 1, 1, seed=0)[0, 0] == 0.9494793096432265


def test_replacement_durations_empirical_quantiles():
    latency = np.array([40.0, 10.0, 30.0, 20.0])
    u = np.array([[0.0, 0.2499, 0.25, 0.5, 0.9999999999999999]])
    np.testing.assert_array_equal(replacement_durations(latency, u), [[10, 10, 20, 30, 40]])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(task_end=[1.0, -0.5]), "task 1: need finite task_start <= task_end"),
        (dict(flag_time=[NAN, 1.0]), r"task 1: flag_time 1.0 outside \[task_start, task_end\)"),
        (dict(flag_time=[0.0, 0.5]), "not on the checkpoint grid"),
        (dict(replacement=[[1.0, -1.0]]), r"replacement\[0, 1\]"),
        (dict(replacement=[1.0, 1.0]), "replacement must have shape"),
        (dict(machines=[10, -1]), "machines must be ints >= 0"),
        (dict(checkpoint_interval=0.0), "checkpoint_interval must be"),
    ],
)
def test_bad_input_is_named(kwargs, message):
    args = dict(
        task_start=[0.0, 0.0],
        task_end=[5.0, 1.0],
        flag_time=[NAN, 0.0],
        replacement=[[1.0, 1.0]],
        machines=[10],
        grid_origin=0.0,
        checkpoint_interval=1.0,
    )
    args.update(kwargs)
    with pytest.raises(ValueError, match=message) as info:
        mitigated_jct_limited(job_id="j9", **args)
    assert "job 'j9'" in str(info.value)


def test_bad_random_number_inputs():
    with pytest.raises(ValueError, match="seed"):
        replacement_uniforms("j", 3, 2, seed=-1)
    with pytest.raises(ValueError, match="job_id"):
        replacement_uniforms("", 3, 2, seed=0)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        replacement_durations(np.ones(3), np.array([[1.0]]))


# ---------------------------------------------------------------------------------------------
# the two readings of Algorithm 2's relaunch (simulation.relaunch), on a hand-made job:
# task 0 runs [0, 400), task 1 [0, 1000), task 2 [100, 500); tasks 1 and 2 are flagged at
# 300; the copies' drawn durations are (200, 50) in repeat 0 and (600, 700) in repeat 1.
READING_START = np.array([0.0, 0.0, 100.0])
READING_END = np.array([400.0, 1000.0, 500.0])
READING_FLAG = np.array([np.nan, 300.0, 300.0])
READING_DRAWS = np.array([[999.0, 200.0, 50.0], [999.0, 600.0, 700.0]])


def test_algorithm2_copy_starts_at_the_flag_by_hand():
    # ends: repeat 0 (400, 300+200, 300+50) -> JCT 500; repeat 1 (400, 900, 1000) -> 1000
    reduction = simulate_unlimited(READING_START, READING_END, READING_FLAG, READING_DRAWS)
    np.testing.assert_allclose(reduction, [(1000 - 500) / 1000, 0.0])


def test_algorithm2_replace_the_latency_by_hand():
    # ends: repeat 0 (400, 0+200, 100+50) -> JCT 400; repeat 1 (400, 600, 800) -> 800
    reduction = simulate_unlimited(
        READING_START, READING_END, READING_FLAG, READING_DRAWS, relaunch_from="start"
    )
    np.testing.assert_allclose(reduction, [0.6, 0.2])


def test_algorithm3_both_readings_by_hand():
    # grid every 100 s from 0. m = 2: at 300 and 400 all machines are busy (tasks 0-2, then
    # 1-2); at 500 task 2 has ended, task 1 is relaunched: ends 500 + draw or 0 + draw.
    # m = 3: at 400 one machine is free: task 1 (first in service order) is relaunched at 400;
    # task 2 ends at 500 before a machine frees. m = 4: at 300 one is free (task 1); at 400
    # task 0 has ended and, under "from the flag", task 1's copy holds a machine: task 2 is
    # relaunched at 400 (ends 450 / 1100, or 100 + 50 / 100 + 700).
    machines = [2, 3, 4]
    from_flag = simulate_limited(
        READING_START,
        READING_END,
        READING_FLAG,
        READING_DRAWS,
        machines,
        grid_origin=0.0,
        checkpoint_interval=100.0,
    )
    replace = simulate_limited(
        READING_START,
        READING_END,
        READING_FLAG,
        READING_DRAWS,
        machines,
        grid_origin=0.0,
        checkpoint_interval=100.0,
        relaunch_from="start",
    )
    np.testing.assert_allclose(from_flag, [[0.3, -0.1], [0.4, 0.0], [0.5, -0.1]])
    np.testing.assert_allclose(replace, [[0.5, 0.4], [0.5, 0.4], [0.6, 0.2]])


def test_relaunch_readings_and_draw_pool():
    from stragglers.simulate.jct import RELAUNCH_READINGS, draw_pool, relaunch_reading

    assert list(RELAUNCH_READINGS)[0] == "from_flag"  # the default
    assert relaunch_reading("replace_latency") == ("start", "all")
    pool = draw_pool(
        np.array([400.0, 1000.0, 300.0]), np.array([False, True, False]), "non_stragglers"
    )
    np.testing.assert_array_equal(pool, [400.0, 300.0])
    # uniforms map through the pool's sorted values: floor(u * 2) -> 300, 400
    np.testing.assert_array_equal(
        replacement_durations(pool, np.array([[0.1, 0.7]])), [[300.0, 400.0]]
    )
    with pytest.raises(ValueError, match="simulation.relaunch"):
        relaunch_reading("restart")
    with pytest.raises(ValueError, match="simulation.relaunch"):
        simulate_unlimited(
            READING_START, READING_END, READING_FLAG, READING_DRAWS, relaunch_from="end"
        )
