"""The replay at explicit checkpoint times (a live run's polls) and with the threshold a live
run gave its method: the grid's times given explicitly change nothing; other times and
thresholds reach the method."""

import numpy as np
import pytest
from jobfactory import LAST, make_job

from stragglers.methods.elapsed import Elapsed
from stragglers.methods.nurd import NURD
from stragglers.replay.core import ReplaySettings, checkpoint_times
from stragglers.replay.wallclock import explicit_times, iterate_checkpoints, replay_wallclock_job


@pytest.mark.parametrize("method", [Elapsed, NURD])
def test_the_grid_given_explicitly_gives_the_same_run(method):
    job, settings = make_job(120, seed=3), ReplaySettings()
    grid = checkpoint_times(job.task_start, job.task_end, settings)
    # the explicit list may hold times before and after the job: only its share is used
    times = np.r_[grid[0] - 600, grid[0] - 300, grid, grid[-1] + 300]
    ours = replay_wallclock_job(job, method(seed=1), settings, LAST, 1)
    theirs = replay_wallclock_job(job, method(seed=1), settings, LAST, 1, times=times)
    np.testing.assert_array_equal(ours.flag_time, theirs.flag_time)
    assert ours.n_checkpoints == theirs.n_checkpoints
    assert ours.threshold == theirs.threshold


def test_explicit_times_index_their_list_and_need_order():
    start, end = np.array([10.0, 12.0]), np.array([30.0, 31.0])
    times, first = explicit_times(start, end, np.array([5.0, 10.0, 11.0, 20.0, 31.0, 40.0]))
    assert times.tolist() == [11.0, 20.0, 31.0] and first == 2
    with pytest.raises(ValueError, match="strictly increasing"):
        explicit_times(start, end, np.array([11.0, 11.0]))
    job = make_job(60, seed=2)
    t = np.sort(np.unique(np.round(np.linspace(job.task_start.min(), job.task_end.max(), 7), 3)))
    flagged = np.zeros(job.n_tasks, dtype=bool)
    points = list(iterate_checkpoints(job, ReplaySettings(), LAST, flagged, flagged, times=t))
    assert {p.time for p in points} <= set(t.tolist())
    assert [p.index for p in points] == [int(np.searchsorted(t, p.time)) for p in points]


def test_the_method_threshold_reaches_the_method_not_the_scoring():
    job, settings = make_job(120, seed=4), ReplaySettings()
    own = replay_wallclock_job(job, Elapsed(), settings, LAST, 0)
    low = replay_wallclock_job(job, Elapsed(), settings, LAST, 0, method_threshold=1.0)
    assert low.threshold == own.threshold  # scored against the job's own p90
    # Elapsed flags a task once its elapsed time reaches the threshold it is given
    assert (~np.isnan(low.flag_time)).sum() > (~np.isnan(own.flag_time)).sum()
