"""The online replay: checkpoints, prediction start, no leakage, flagged tasks not re-evaluated."""

import dataclasses

import numpy as np
import pytest
from jobfactory import FEATURES, LAST, make_job, make_job_frame

from stragglers.formats.features import prediction_start_count
from stragglers.formats.jobs import job_from_frame
from stragglers.methods.base import Checkpoint, Method
from stragglers.replay.core import ReplaySettings, checkpoint_times, straggler_threshold
from stragglers.replay.runner import replay_job, run_method_on_jobs
from stragglers.replay.wallclock import iterate_checkpoints


class Recorder(Method):
    """Flags nothing (or everything at one checkpoint) and records what it was shown."""

    name = "Recorder"
    family = "Test"
    defaults = {"flag_at": -1}

    def start_job(self, job):
        super().start_job(job)
        self.seen: list[Checkpoint] = []

    def predict(self, checkpoint):
        self.seen.append(checkpoint)
        flag = len(self.seen) - 1 == self.params["flag_at"]
        return np.full(len(checkpoint.running_tasks), flag)


def _replay(job, method, settings=None):
    settings = settings or ReplaySettings()
    return replay_job(job, method, settings, LAST, seed=0)


def test_checkpoints_lie_on_the_window_grid():
    times = checkpoint_times(
        np.array([650.0, 1000.0]), np.array([1300.0, 2000.0]), ReplaySettings()
    )
    assert times.tolist() == [900.0, 1200.0, 1500.0, 1800.0, 2100.0]


def test_prediction_starts_once_four_percent_finished():
    job = make_job(200, seed=1)
    method = Recorder()
    run = _replay(job, method)
    needed = prediction_start_count(200, 0.04)
    assert needed == 8
    first = method.seen[0]
    assert first.first_prediction and len(first.finished_tasks) >= needed
    # one grid step earlier, fewer than 4% had finished
    earlier = first.time - 300.0
    assert (job.task_end <= earlier).sum() < needed
    assert run.prediction_start == first.time
    assert all(not cp.first_prediction for cp in method.seen[1:])


def test_finished_and_running_sets_follow_the_clock():
    job = make_job(150, seed=2)
    method = Recorder()
    _replay(job, method)
    for cp in method.seen:
        assert np.all(job.task_end[cp.finished_tasks] <= cp.time)
        assert np.all(job.task_start[cp.running_tasks] <= cp.time)
        assert np.all(job.task_end[cp.running_tasks] > cp.time)
        np.testing.assert_allclose(cp.running_elapsed, cp.time - job.task_start[cp.running_tasks])
        np.testing.assert_allclose(cp.finished_latency, job.latency[cp.finished_tasks])


def test_flagged_tasks_are_not_evaluated_again():
    job = make_job(150, seed=3)
    method = Recorder({"flag_at": 1})
    run = _replay(job, method)
    flagged_at_second = set(method.seen[1].running_tasks.tolist())
    for cp in method.seen[2:]:
        assert flagged_at_second.isdisjoint(cp.running_tasks.tolist())
    assert np.all(run.flag_time[list(flagged_at_second)] == method.seen[1].time)
    assert np.isnan(np.delete(run.flag_time, list(flagged_at_second))).all()


def _checkpoint_at(job, t, settings=None):
    settings = settings or ReplaySettings()
    flagged = np.zeros(job.n_tasks, dtype=bool)
    excluded = np.zeros(job.n_tasks, dtype=bool)
    for cp in iterate_checkpoints(job, settings, LAST, flagged, excluded):
        if cp.time == t:
            return cp
    raise AssertionError(f"no checkpoint at {t}")


def test_running_features_do_not_depend_on_the_future():
    """Change everything after t (window values, later windows, final latency): the
    checkpoint at t must be identical."""
    frame = make_job_frame(120, seed=4)
    job = job_from_frame("j", frame, FEATURES)
    t = _checkpoint_at(job, np.sort(job.task_end)[20] // 300 * 300 + 600 + 300).time
    before = _checkpoint_at(job, t)
    future = frame.copy()
    later = future["available_from"] > t
    rng = np.random.default_rng(9)
    future.loc[later, ["cpu", "io", "noise"]] = rng.normal(50, 10, (later.sum(), 3))
    still_running = future["task_end"] > t
    future.loc[still_running, "task_end"] += 5000.0
    future.loc[still_running, "latency"] += 5000.0
    future.loc[later & still_running, "window_end"] = (
        future.loc[later & still_running, "window_end"] + 1.0
    )
    after = _checkpoint_at(job_from_frame("j", future, FEATURES), t)
    for field in dataclasses.fields(Checkpoint):
        a, b = getattr(before, field.name), getattr(after, field.name)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=field.name)


def test_running_features_are_duration_weighted_means_of_ended_windows():
    frame = make_job_frame(60, seed=5)
    job = job_from_frame("j", frame, FEATURES)
    cp = next(
        iter(
            iterate_checkpoints(job, ReplaySettings(), LAST, np.zeros(60, bool), np.zeros(60, bool))
        )
    )
    task = cp.running_tasks[0]
    rows = frame[(frame["task"] == task) & (frame["available_from"] <= cp.time)]
    duration = rows["window_end"] - rows["window_start"]
    expected = (rows["cpu"] * duration).sum() / duration.sum()
    assert cp.running_features[0, 0] == pytest.approx(expected)


def test_privileged_latency_only_for_privileged_methods():
    job = make_job(100, seed=6)
    plain = Recorder()
    _replay(job, plain)
    assert plain.job.true_latency is None

    class Privileged(Recorder):
        name = "Privileged"
        privileged = True

    special = Privileged()
    _replay(job, special)
    np.testing.assert_array_equal(special.job.true_latency, job.latency)


def test_threshold_is_the_job_quantile():
    latency = np.arange(1, 101, dtype=float)
    assert straggler_threshold(latency, 0.9) == pytest.approx(np.quantile(latency, 0.9))
    assert straggler_threshold(latency, 0.9, "reference") == 91.0


def test_a_failing_method_is_recorded_as_failed_with_its_reason():
    class Broken(Recorder):
        name = "Broken"

        def predict(self, checkpoint):
            raise RuntimeError("deliberate failure")

    jobs = [make_job(100, seed=s) for s in range(3)]
    tasks, job_rows = run_method_on_jobs(iter(jobs), Broken, {}, ReplaySettings(), LAST, 1, "d")
    assert job_rows["status"].tolist() == ["failed"] * 3
    assert job_rows["reason"].str.contains("RuntimeError: deliberate failure").all()
    assert tasks.empty  # no metrics invented for failed jobs


def test_a_method_returning_the_wrong_shape_fails_its_job():
    class WrongShape(Recorder):
        name = "WrongShape"

        def predict(self, checkpoint):
            return np.zeros(len(checkpoint.running_tasks) + 1, dtype=bool)

    _, job_rows = run_method_on_jobs(
        iter([make_job(100)]), WrongShape, {}, ReplaySettings(), LAST, 1, "d"
    )
    assert job_rows["status"].iloc[0] == "failed"
    assert "decisions for" in job_rows["reason"].iloc[0]


def test_reference_protocol_uses_final_latency_and_drops_tasks():
    job = make_job(200, seed=7)
    causal, reference = Recorder(), Recorder()
    _replay(job, causal)
    run = _replay(job, reference, ReplaySettings(protocol="reference"))
    assert not run.evaluated.all()  # tasks dropped by their final length
    # reference features are min-max scaled with all tasks' final values: inside [0, 1]-ish
    first = reference.seen[0]
    assert first.finished_features.min() >= -1e-9 and first.finished_features.max() <= 1 + 1e-9


def test_settings_are_validated():
    with pytest.raises(ValueError, match="protocol"):
        ReplaySettings(protocol="future")
    with pytest.raises(ValueError, match="straggler_quantile"):
        ReplaySettings(straggler_quantile=0.2)


def test_unknown_method_parameter_is_an_error():
    with pytest.raises(ValueError, match="unknown parameter"):
        Recorder({"nope": 1})


def test_tasks_a_method_trains_on_stay_visible_but_are_not_scored():
    class TrainsOnSome(Recorder):
        name = "TrainsOnSome"

        def excluded_from_evaluation(self):
            return np.arange(10)

    job = make_job(120, seed=8)
    method = TrainsOnSome()
    run = _replay(job, method)
    seen = set()
    for cp in method.seen:
        seen.update(cp.running_tasks.tolist())
        seen.update(cp.finished_tasks.tolist())
    assert set(range(10)) <= seen
    assert not run.evaluated[:10].any() and run.evaluated[10:].all()


def test_a_datasets_replay_settings_overlay_the_global_ones():
    from stragglers.replay.core import dataset_replay

    replay = {"protocol": "causal", "checkpoint_interval": 300, "start_fraction": 0.04}
    dataset = {"kind": "alibaba-2018", "replay": {"checkpoint_interval": 60, "grid_origin": 0}}
    assert dataset_replay(replay, dataset) == {
        "protocol": "causal",
        "checkpoint_interval": 60,
        "start_fraction": 0.04,
        "grid_origin": 0,
    }
    assert dataset_replay(replay, {"kind": "google-2011"}) == replay
    assert replay["checkpoint_interval"] == 300  # the global section is left as it was
