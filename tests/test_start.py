"""START / START-MLE (stragglers/methods/start*.py) and the cross-job history they learn from."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from jobfactory import (
    FEATURES,
    LAST,
    RecordingHistory,
    make_job_frame,
    register_test_kind,
    write_jobs,
)

from stragglers.formats.jobs import job_from_frame
from stragglers.methods import declared_cross_job, get_method
from stragglers.methods._start import (
    expected_stragglers,
    history_mean_multiple,
    mean_multiple_of_quantile,
    pareto_mle,
    start_rule,
)
from stragglers.methods.start import _latest_machine_state, moving_average, step_input
from stragglers.replay.core import ReplaySettings
from stragglers.replay.history import JobHistory
from stragglers.replay.runner import run_method_on_jobs

SETTINGS = ReplaySettings(grid_origin=600.0, checkpoint_interval=300.0)
FAST_START = {"epochs": 15, "refit_every": 2}


# ---- the Pareto formulas -------------------------------------------------------------------


def test_mle_on_a_hand_sample():
    beta, alpha = pareto_mle(np.array([1.0, 2.0, 4.0]))
    assert beta == 1.0
    assert alpha == pytest.approx(3 / (math.log(2) + math.log(4)))


def test_censored_mle_on_a_hand_sample():
    # two observed times, one task still running at 4 s (its time is > 4)
    beta, alpha = pareto_mle(np.array([1.0, 2.0]), np.array([4.0]))
    assert beta == 1.0
    assert alpha == pytest.approx(2 / (math.log(2) + math.log(4)))
    # a censoring time below beta carries no information about alpha
    assert pareto_mle(np.array([1.0, 2.0]), np.array([0.5]))[1] == pytest.approx(2 / math.log(2))


def test_mle_recovers_a_known_pareto():
    rng = np.random.default_rng(3)
    sample = 2.0 * (1.0 + rng.pareto(3.0, 20000))  # numpy's pareto is the Lomax: shift
    beta, alpha = pareto_mle(sample)
    assert beta == pytest.approx(2.0, rel=1e-3)
    assert alpha == pytest.approx(3.0, rel=0.03)


def test_censored_mle_corrects_the_bias_of_finished_tasks_only():
    rng = np.random.default_rng(4)
    times = 2.0 * (1.0 + rng.pareto(2.0, 20000))
    censor = rng.uniform(2.0, 8.0, times.size)  # the checkpoint came before some ends
    done = times <= censor
    _, censored_alpha = pareto_mle(times[done], censor[~done])
    _, naive_alpha = pareto_mle(times[done])
    assert censored_alpha == pytest.approx(2.0, rel=0.05)
    assert naive_alpha > 2.5  # finished tasks alone look lighter-tailed


def test_expected_stragglers_is_n_times_the_pareto_survival_at_k_means():
    beta, alpha, k_mult, n = 3.0, 2.5, 1.5, 200
    mean = alpha * beta / (alpha - 1)
    survival = (beta / (k_mult * mean)) ** alpha
    assert expected_stragglers(n, alpha, k_mult) == pytest.approx(n * survival)
    assert expected_stragglers(10, 2.0, 1.0) == pytest.approx(2.5)
    # a threshold below beta: every task is beyond it
    assert expected_stragglers(10, 1.5, 0.1) == 10


def test_mean_multiple_is_the_quantile_over_the_mean():
    latency = np.arange(1.0, 11.0)
    assert mean_multiple_of_quantile(latency, 0.9) == pytest.approx(np.quantile(latency, 0.9) / 5.5)


def test_start_rule_flags_the_rest_once_n_minus_k_finished():
    assert not start_rule(10, 7, 2.4, 3).any()  # k = 2: needs 8 finished
    assert start_rule(10, 8, 2.4, 2).all()
    assert not start_rule(10, 9, 0.4, 1).any()  # k = 0: nothing mitigated
    assert start_rule(10, 8, 2.4, 0).shape == (0,)


def test_moving_average_weights_the_latest_step():
    out = moving_average(np.array([[0.0], [1.0], [1.0]]), 0.8)
    assert out[:, 0] == pytest.approx([0.0, 0.8, 0.96])


def test_step_input_has_a_fixed_size_and_uses_machine_state():
    rng = np.random.default_rng(0)
    a, _ = step_input(
        50,
        rng.uniform(1, 2, 5),
        rng.normal(size=(5, 4)),
        rng.uniform(1, 3, 9),
        rng.normal(size=(9, 4)),
        rng.normal(size=(9, 3)),
        4,
        3,
    )
    b, _ = step_input(
        50,
        rng.uniform(1, 2, 20),
        rng.normal(size=(20, 4)),
        rng.uniform(1, 3, 2),
        rng.normal(size=(2, 4)),
        None,
        4,
        3,
    )
    assert a.shape == b.shape == (2 + 6 + 4 * 4 + 2 * 3,)
    assert np.any(a[-6:] != 0) and np.all(b[-6:] == 0)


def test_latest_machine_state_is_the_last_window_available():
    job = job_from_frame("j", make_job_frame(20, seed=1), FEATURES)
    job.window_machine_state = np.arange(len(job.window_task), dtype=float)[:, None]
    t = float(np.median(job.available_from))
    tasks = np.arange(job.n_tasks)
    state = _latest_machine_state(job, t, tasks)
    for task in tasks:
        mine = np.flatnonzero((job.window_task == task) & (job.available_from <= t))
        expected = np.nan if len(mine) == 0 else float(mine.max())
        assert state[task, 0] == pytest.approx(expected, nan_ok=True)
    job.window_machine_state = np.empty((len(job.window_task), 0))
    assert _latest_machine_state(job, t, tasks) is None


# ---- the cross-job history -----------------------------------------------------------------


@pytest.fixture()
def trace(tmp_path, monkeypatch):
    import stragglers.methods._start as shared
    import stragglers.methods.start as start

    monkeypatch.setattr(shared, "_multiple_cache", {})
    monkeypatch.setattr(start, "_sequence_cache", {})
    monkeypatch.setattr(start, "_model_cache", {})
    manifest = write_jobs(tmp_path)
    register_test_kind(monkeypatch)
    return tmp_path, manifest


def test_finished_before_and_load_refuse_the_future(trace):
    folder, manifest = trace
    history = JobHistory(manifest, folder, "test")
    t = float(manifest["job_end"].sort_values().iloc[2])
    finished = history.finished_before(t)
    assert list(finished["job_end"]) == sorted(finished["job_end"])
    assert (finished["job_end"] <= t).all() and len(finished) == 3
    later = manifest.loc[manifest["job_end"] > t, "job_id"].iloc[0]
    with pytest.raises(ValueError, match="after the prediction time"):
        history.load(later, t)
    first = finished["job_id"].iloc[0]
    assert history.load(first, t).job_id == first
    history.load(first, t)
    assert history.loads == 1  # cached


@pytest.mark.parametrize("method", ["START", "START-MLE"])
def test_a_model_never_sees_a_job_unfinished_at_prediction_time(trace, method):
    folder, manifest = trace
    history = RecordingHistory(manifest, folder, "test", seed=1)
    jobs = [
        job_from_frame(r.job_id, pd.read_parquet(folder / r.path), FEATURES)
        for r in manifest.itertuples()
    ]
    trained_before = getattr(get_method(method), "trainings", 0)
    tasks, job_rows = run_method_on_jobs(
        iter(jobs),
        get_method(method),
        FAST_START if method == "START" else {},
        SETTINGS,
        LAST,
        7,
        "t",
        history=history,
    )
    assert (job_rows["status"] == "ok").all(), job_rows["reason"].tolist()
    assert history.loaded, "the later jobs should have learnt from earlier ones"
    if method == "START":
        assert get_method(method).trainings > trained_before
    ends = dict(zip(manifest["job_id"], manifest["job_end"]))
    starts = dict(zip(job_rows["job_id"], job_rows["prediction_start"]))
    for job_id, time in history.loaded:
        assert time is not None and ends[job_id] <= time
    # it asks only about times the replay had reached: a job's first prediction
    assert set(history.asked) <= set(starts.values())


@pytest.mark.parametrize("method", ["START", "START-MLE"])
def test_rule_flags_every_task_running_once_n_minus_k_finished(trace, method):
    folder, manifest = trace
    history = JobHistory(manifest, folder, "test", seed=1)
    row = manifest.iloc[-1]
    job = job_from_frame(row.job_id, pd.read_parquet(folder / row.path), FEATURES)
    tasks, job_rows = run_method_on_jobs(
        iter([job]),
        get_method(method),
        FAST_START if method == "START" else {},
        SETTINGS,
        LAST,
        7,
        "t",
        history=history,
    )
    flagged = tasks[tasks["flagged"]]
    assert len(flagged), "the hand-made job has stragglers START should expect"
    first = flagged["flag_time"].min()
    at_first = flagged[flagged["flag_time"] == first]
    running = (job.task_start <= first) & (job.task_end > first)
    # every task running at the first flag is flagged then, and once n - k finished
    assert set(at_first["task"]) == set(np.flatnonzero(running))
    assert int((job.task_end <= first).sum()) >= job.n_tasks - len(at_first) - 0
    before = first - SETTINGS.checkpoint_interval
    assert not (tasks["flag_time"] < first).any()
    assert int((job.task_end <= before).sum()) < job.n_tasks  # sanity: the rule waited


@pytest.mark.parametrize("method", ["START", "START-MLE"])
def test_decisions_do_not_depend_on_running_latency(trace, method):
    folder, manifest = trace
    history = JobHistory(manifest, folder, "test", seed=1)
    row = manifest.iloc[-1]
    frame = pd.read_parquet(folder / row.path)
    job = job_from_frame(row.job_id, frame, FEATURES)
    params = FAST_START if method == "START" else {}
    tasks, _ = run_method_on_jobs(
        iter([job]), get_method(method), params, SETTINGS, LAST, 7, "t", history=history
    )
    flag_time = tasks["flag_time"].to_numpy()
    cut = np.nanmin(flag_time)
    # the tasks still running at the first flag take 10x longer: windows after `cut` move,
    # nothing the method saw up to `cut` changes, so neither may its decisions up to `cut`
    longer = frame.copy()
    late = longer["task_end"] > cut
    stretch = np.where(late, 10.0, 1.0)
    longer["latency"] = longer["latency"] * stretch
    longer["task_end"] = longer["task_start"] + longer["latency"]
    after = longer["window_start"] >= cut
    longer.loc[late & after, ["window_start", "window_end", "available_from"]] += 1e6
    job2 = job_from_frame(row.job_id, longer, FEATURES)
    tasks2, _ = run_method_on_jobs(
        iter([job2]), get_method(method), params, SETTINGS, LAST, 7, "t", history=history
    )
    first = tasks["flag_time"] <= cut
    assert np.array_equal(tasks.loc[first, "task"], tasks2.loc[tasks2["flag_time"] <= cut, "task"])


def test_start_is_deterministic(trace, monkeypatch):
    import stragglers.methods.start as start

    folder, manifest = trace
    jobs = [
        job_from_frame(r.job_id, pd.read_parquet(folder / r.path), FEATURES)
        for r in manifest.itertuples()
    ]
    runs = []
    for _ in range(2):
        monkeypatch.setattr(start, "_model_cache", {})
        history = JobHistory(manifest, folder, "test", seed=1)
        tasks, rows = run_method_on_jobs(
            iter(jobs), get_method("START"), FAST_START, SETTINGS, LAST, 7, "t", history=history
        )
        runs.append(tasks)
    pd.testing.assert_frame_equal(runs[0], runs[1])


def test_cross_job_methods_are_declared():
    assert declared_cross_job("START") and declared_cross_job("START-MLE")
    assert not declared_cross_job("NURD")
    assert get_method("START").cross_job


def test_without_history_a_cross_job_method_fails_its_job(trace):
    folder, manifest = trace
    row = manifest.iloc[0]
    job = job_from_frame(row.job_id, pd.read_parquet(folder / row.path), FEATURES)
    _, rows = run_method_on_jobs(iter([job]), get_method("START-MLE"), {}, SETTINGS, LAST, 7, "t")
    assert rows["status"].iloc[0] == "failed" and "JobHistory" in rows["reason"].iloc[0]


def test_history_multiple_uses_only_finished_jobs(trace):
    folder, manifest = trace
    history = JobHistory(manifest, folder, "test")
    value, used = history_mean_multiple(history, 0.0, 0.9, 20)
    assert math.isnan(value) and used == 0
    t = float(manifest["job_end"].max())
    value, used = history_mean_multiple(history, t, 0.9, 3)
    assert used == 3 and value > 1.0


class _FixedHistory:
    """A hand-made history: two earlier jobs whose p90 / mean is known."""

    converted_dir = "hand"
    kind = "test"

    def __init__(self):
        self.jobs = {"a": np.arange(1.0, 11.0), "b": np.arange(1.0, 21.0)}

    def finished_before(self, time):
        return pd.DataFrame({"job_id": ["a", "b"], "job_end": [0.0, 1.0]})

    def load(self, job_id, time=None):
        class _Job:
            latency = self.jobs[job_id]

        return _Job()


def _checkpoint(finished_latency, running_elapsed, index, first):
    from stragglers.methods.base import Checkpoint

    n_fin, n_run = len(finished_latency), len(running_elapsed)
    return Checkpoint(
        time=100.0 + index,
        index=index,
        first_prediction=first,
        finished_tasks=np.arange(n_fin),
        finished_features=np.zeros((n_fin, 2)),
        finished_latency=np.asarray(finished_latency, float),
        running_tasks=np.arange(n_fin, n_fin + n_run),
        running_features=np.zeros((n_run, 2)),
        running_elapsed=np.asarray(running_elapsed, float),
    )


def test_start_mle_rule_on_hand_made_checkpoints(monkeypatch):
    import stragglers.methods._start as shared
    from stragglers.methods.base import JobInfo

    monkeypatch.setattr(shared, "_multiple_cache", {})
    method = get_method("START-MLE")({}, seed=0)
    n = 20
    method.start_job(
        JobInfo(
            job_id="j",
            n_tasks=n,
            feature_names=("x", "y"),
            straggler_threshold=1.0,
            seed=0,
            history=_FixedHistory(),
            job_start=0.0,
        )
    )
    k_mult = float(
        np.median(
            [
                np.quantile(np.arange(1.0, 11.0), 0.9) / 5.5,
                np.quantile(np.arange(1.0, 21.0), 0.9) / 10.5,
            ]
        )
    )
    rng = np.random.default_rng(0)
    everything = np.sort(1.0 + rng.pareto(1.5, n))
    decisions = []
    for i, n_fin in enumerate(range(10, n)):
        finished = everything[:n_fin]
        elapsed = np.full(n - n_fin, everything[n_fin - 1])  # running tasks are censored here
        flags = method.predict(_checkpoint(finished, elapsed, i, i == 0))
        _, alpha = pareto_mle(finished, elapsed)
        k = round(expected_stragglers(n, alpha, k_mult))
        assert method.mean_multiple == pytest.approx(k_mult)
        assert flags.all() == (k >= 1 and n_fin >= n - k) and flags.all() == flags.any()
        decisions.append(bool(flags.any()))
    assert decisions[-1] and not decisions[0]  # the rule fires only late in the job


def test_predict_jobs_of_a_cross_job_method_come_after_every_shard(
    tmp_path, tiny_config, run_snakemake
):
    """The workflow (dry run) runs START-MLE's predict jobs after every shard is gathered: they
    read the manifest, which convert_manifest writes from every shard's; others get their own
    shard's folder."""
    import re

    import yaml

    path = tiny_config(tmp_path / "config.yaml")
    config = yaml.safe_load(path.read_text())
    config["methods"] = {"START-MLE": {}, "Elapsed": {}}
    config["method_dirs"] = []
    config["datasets"]["google-tiny"]["n_shards"] = 2
    del config["tuning"]  # its grid is NURD's
    path.write_text(yaml.safe_dump(config))
    run = run_snakemake(tmp_path, path, "-n", timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    inputs = {}
    for block in re.split(r"\n\s*\n|\[[^\]]*\]\n", run.stdout + run.stderr):
        wildcards = re.search(r"wildcards: dataset=google-tiny, method=([^,]+), shard=0", block)
        if "rule predict" in block and wildcards:
            inputs[wildcards.group(1)] = re.search(r"input: (.*)", block).group(1)
        if "rule convert_manifest" in block and "dataset=google-tiny" in block:
            inputs["convert_manifest"] = re.search(r"input: (.*)", block).group(1)
    manifest = "resources/converted/google-tiny/manifest.parquet"
    assert manifest in inputs["START-MLE"] and manifest in inputs["Elapsed"]
    assert "jobs/shard-0" in inputs["Elapsed"] and "jobs/shard-1" not in inputs["Elapsed"]
    # the manifest is written from every shard's gather_shard output
    shard_manifests = "resources/convert/google-tiny/shards/shard-{}.parquet"
    assert all(shard_manifests.format(k) in inputs["convert_manifest"] for k in (0, 1))


def test_a_cross_job_method_fails_on_the_aligned_timeline(trace):
    folder, manifest = trace
    history = JobHistory(manifest, folder, "test")
    row = manifest.iloc[-1]
    job = job_from_frame(row.job_id, pd.read_parquet(folder / row.path), FEATURES)
    settings = ReplaySettings(grid_origin=600.0, checkpoint_interval=300.0, protocol="paper")
    _, rows = run_method_on_jobs(
        iter([job]), get_method("START-MLE"), {}, settings, LAST, 7, "t", history=history
    )
    assert rows["status"].iloc[0] == "failed" and "trace's clock" in rows["reason"].iloc[0]


def test_training_sequences_step_on_the_prediction_grid(trace, monkeypatch):
    """Windows of 300 s, checkpoints every 60 s. START predicts one LSTM step per
    checkpoint, so an earlier job's training sequence must step every 60 s too: row k is the
    job seen at grid time t_k = t_0 + 60 k, t_0 the first checkpoint where 4 % of its tasks
    had finished, capped at 128 steps. Checked by hand from the job's task ends (the share of
    finished tasks is the first input of a step); before the fix a step was the earlier job's
    median window length (300 s)."""
    import stragglers.methods.start as start

    folder, manifest = trace
    settings = ReplaySettings(grid_origin=600.0, checkpoint_interval=60.0)
    recorded, prediction_times = [], {}
    original_sequence = start.job_sequence

    def recording_sequence(job, *args, **kwargs):
        inputs, minima = original_sequence(job, *args, **kwargs)
        recorded.append((job, inputs))
        return inputs, minima

    original_alpha = start.Start._network_alpha

    def recording_alpha(self, checkpoint):
        prediction_times.setdefault(self.job.job_id, []).append(checkpoint.time)
        return original_alpha(self, checkpoint)

    monkeypatch.setattr(start, "job_sequence", recording_sequence)
    monkeypatch.setattr(start.Start, "_network_alpha", recording_alpha)
    history = JobHistory(manifest, folder, "test", seed=1)
    jobs = [
        job_from_frame(r.job_id, pd.read_parquet(folder / r.path), FEATURES)
        for r in manifest.itertuples()
    ]
    _, rows = run_method_on_jobs(
        iter(jobs), get_method("START"), FAST_START, settings, LAST, 7, "t", history=history
    )
    assert (rows["status"] == "ok").all(), rows["reason"].tolist()
    assert recorded and prediction_times, "START should have trained and predicted"
    for times in prediction_times.values():  # the prediction side: one step per checkpoint
        np.testing.assert_allclose(np.diff(times), 60.0)
    for job, inputs in recorded:
        # sanity: this job's windows are longer than the checkpoint interval
        assert np.median(job.window_end - job.window_start) > 4 * settings.checkpoint_interval
        needed = max(2, math.ceil(0.04 * job.n_tasks))
        grid = 600.0 + 60.0 * np.arange(0, math.ceil((job.task_end.max() - 600.0) / 60.0) + 1)
        finished = (job.task_end[None, :] <= grid[:, None]).sum(axis=1)
        grid, finished = grid[finished >= needed], finished[finished >= needed]
        grid, finished = grid[grid > job.task_start.min()], finished[grid > job.task_start.min()]
        expected = (finished / job.n_tasks)[:128]
        assert len(inputs) == len(expected)
        np.testing.assert_allclose(inputs[:, 0], expected)
