"""The launch-time, cross-job protocol: labels, no training on the future, the learning curve,
unseen nodes and workloads, and the hold-back simulation."""

import numpy as np
import pandas as pd
import pytest

from stragglers.launch.crossjob import (
    LaunchSettings,
    add_labels,
    learning_curve,
    online_predictions,
    oversample_stragglers,
    training_rows,
)
from stragglers.launch.methods.base import LaunchMethod
from stragglers.launch.simulate import hold_back_ends, simulate_hold_back_job
from stragglers.launch.tasks import straggler_labels

FEATURES = ["launch_machine_running_tasks", "launch_machine_cpu_requested"]


def launch_frame(n_jobs=8, n_tasks=40, seed=0, spacing=500.0):
    """Jobs start every `spacing` s and overlap; a busy machine (feature 0 high) makes a task
    slow, so a model on feature 0 can learn stragglers."""
    rng = np.random.default_rng(seed)
    frames = []
    for j in range(n_jobs):
        job_start = j * spacing
        start = job_start + rng.uniform(0, 50, n_tasks)
        busy = rng.random(n_tasks) < 0.15
        latency = rng.uniform(100, 200, n_tasks) * np.where(busy, 4.0, 1.0)
        frames.append(
            pd.DataFrame(
                {
                    "job_id": f"job{j}",
                    "task": np.arange(n_tasks),
                    "task_start": start,
                    "task_end": start + latency,
                    "latency": latency,
                    "node": rng.integers(0, 6, n_tasks).astype(str),
                    "workload": "w0" if j % 2 == 0 else "w1",
                    FEATURES[0]: np.where(busy, 8.0, 1.0) + rng.normal(0, 0.5, n_tasks),
                    FEATURES[1]: rng.random(n_tasks),
                }
            )
        )
    tasks = pd.concat(frames, ignore_index=True)
    ends = tasks.groupby("job_id")["task_end"].transform("max")
    tasks["job_start"] = tasks.groupby("job_id")["task_start"].transform("min")
    tasks["job_end"] = ends
    return tasks.sort_values(["task_start", "job_id", "task"], ignore_index=True)


class Recording(LaunchMethod):
    """Flags tasks whose feature 0 is above the training stragglers' minimum; records what
    it was trained on."""

    name = "recording"
    calls: list = []

    def fit(self, X, straggler, node, workload):
        self.cut = X[straggler, 0].min()
        type(self).calls.append({"n": len(X), "stragglers": int(straggler.sum())})

    def predict(self, X, node, workload):
        return X[:, 0] >= self.cut


def test_labels_p90_and_wrangler():
    latency = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100, 1, 1, 1, 2.0])
    job = np.array([0] * 11 + [1] * 4)
    p90 = straggler_labels(latency, job, "p90", 0.9)
    assert p90[:11].sum() == 2 and p90[10] and p90[9]  # p90 of 1..10,100 = 10
    wrangler = straggler_labels(latency, job, "wrangler", beta=1.3)
    # job 0: median 6 -> > 7.8; job 1: median 1 -> > 1.3
    np.testing.assert_array_equal(np.flatnonzero(wrangler), [7, 8, 9, 10, 14])
    with pytest.raises(ValueError, match="launch.label"):
        straggler_labels(latency, job, "p99")


def test_no_model_ever_trains_on_a_job_unfinished_at_prediction_time():
    tasks = add_labels(launch_frame(), LaunchSettings(workload="w", min_train_tasks=10))
    seen_times = []

    def spy(frame, time, max_jobs=None):
        rows = training_rows(frame, time, max_jobs)
        seen_times.append((time, frame["job_end"].to_numpy()[rows]))
        return rows

    from stragglers.launch import crossjob as protocol

    original = protocol.training_rows
    protocol.training_rows = spy
    try:
        online_predictions(
            tasks, FEATURES, Recording, {}, LaunchSettings(workload="w", min_train_tasks=10), 1, "d"
        )
        learning_curve(
            tasks, FEATURES, Recording, {}, LaunchSettings(workload="w", min_train_tasks=10), 1, "d"
        )
    finally:
        protocol.training_rows = original
    assert len(seen_times) > 8
    for time, job_ends in seen_times:
        assert (job_ends <= time).all()
    # and the jobs trained on at a job's start are exactly those finished by then
    rows = training_rows(tasks, 1500.0)
    assert set(tasks["job_id"].iloc[rows]) == set(tasks.loc[tasks["job_end"] <= 1500.0, "job_id"])
    # or the latest of them to finish
    latest = training_rows(tasks, 3000.0, max_jobs=2)
    finished = tasks[tasks["job_end"] <= 3000.0].groupby("job_id")["job_end"].first().sort_values()
    assert set(tasks["job_id"].iloc[latest]) == set(finished.index[-2:])


def test_online_predictions_in_the_replay_format():
    tasks = add_labels(launch_frame(), LaunchSettings(workload="w"))
    settings = LaunchSettings(workload="w", min_train_tasks=30)
    Recording.calls = []
    predicted, jobs = online_predictions(tasks, FEATURES, Recording, {}, settings, 1, "d")
    assert set(jobs["status"]) == {"ok"}
    first = jobs.sort_values("job_start").iloc[0]
    assert first["reason"].startswith("no model") and first["n_train_tasks"] == 0
    flagged = predicted[predicted["flagged"]]
    assert len(flagged) > 0 and (flagged["flag_time"] == flagged["task_start"]).all()
    # busy tasks straggle, the model finds them: recall well above chance
    modelled = jobs.loc[jobs["reason"] == "", "job_id"]
    assert len(modelled) >= 5
    later = predicted[predicted["job_id"].isin(modelled)]
    recall = (later["flagged"] & later["is_straggler"]).sum() / later["is_straggler"].sum()
    assert recall > 0.8
    # training sets were balanced by oversampling
    assert all(2 * call["stragglers"] == call["n"] for call in Recording.calls)


def test_a_failing_method_is_reported_as_failed():
    class Broken(Recording):
        name = "broken"

        def predict(self, X, node, workload):
            raise RuntimeError("boom")

    tasks = add_labels(launch_frame(), LaunchSettings(workload="w"))
    _, jobs = online_predictions(
        tasks, FEATURES, Broken, {}, LaunchSettings(workload="w", min_train_tasks=10), 1, "d"
    )
    assert (jobs["status"] == "failed").sum() >= len(jobs) - 2
    assert jobs.loc[jobs["status"] == "failed", "reason"].str.contains("boom").all()


def test_learning_curve_counts_unseen_nodes_and_workloads():
    tasks = launch_frame(n_jobs=10)
    tasks.loc[tasks["job_id"] == "job9", "node"] = "new-node"
    tasks.loc[tasks["job_id"] == "job9", "workload"] = "new-workload"
    tasks = add_labels(tasks, LaunchSettings(workload="w"))
    settings = LaunchSettings(workload="w", train_shares=(0.3, 0.6), min_train_tasks=10)
    curve = learning_curve(tasks, FEATURES, Recording, {}, settings, 1, "d")
    assert list(curve["train_share"]) == [0.3, 0.6]
    assert (curve["n_train"].diff().dropna() > 0).all()
    assert (curve["n_unseen_node"] >= 40).all() and (curve["n_unseen_workload"] >= 40).all()
    assert curve["accuracy"].between(0, 1).all() and curve["TPR"].notna().all()


def test_oversampling_balances_and_is_seeded():
    straggler = np.array([True] * 3 + [False] * 17)
    a = oversample_stragglers(straggler, np.random.default_rng(5))
    b = oversample_stragglers(straggler, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    assert straggler[a].sum() == 17 and (~straggler[a]).sum() == 17


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="train_shares"):
        LaunchSettings(workload="w", train_shares=(0.0, 0.5))


def test_hold_back_by_hand():
    start = np.array([0.0, 0.0, 10.0])
    end = np.array([100.0, 400.0, 110.0])
    replacement = np.array([[50.0, 60.0, 70.0]])
    ends = hold_back_ends(start, end, np.array([False, True, False]), 300.0, replacement)
    np.testing.assert_array_equal(ends, [[100.0, 360.0, 110.0]])
    frame = simulate_hold_back_job(
        "j", start, end, np.array([False, True, False]), 300.0, 100.0, 4, seed=1
    )
    assert (frame["jct_base"] == 400.0).all()
    # held back 300 s then a redrawn latency from {100, 400, 100}: 400 or 700
    assert set(frame["jct_mitigated"]) <= {400.0, 700.0}
    nothing = simulate_hold_back_job("j", start, end, np.zeros(3, bool), 300.0, 100.0, 4, seed=1)
    assert (nothing["reduction"] == 0).all() and (nothing["machine_time_mitigated"] == 600.0).all()
    assert (frame["reference_jct"] == 110.0).all()  # every latency cut to 100
