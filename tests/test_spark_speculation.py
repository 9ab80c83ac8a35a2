"""Spark's speculation rule as a method (Spark-speculation), checked by hand, and a config
entry that runs a method under its own label (stragglers.methods.method_entry)."""

from __future__ import annotations

import numpy as np
import pytest

from stragglers.methods import Checkpoint, JobInfo, check_method_params, get_method, method_entry
from stragglers.methods.spark_speculation import spark_median, speculatable

SPARK4 = {"multiplier": 3.0, "quantile": 0.9, "min_task_runtime": 0.1}


def test_registry_family_and_spark4_defaults():
    cls = get_method("Spark-speculation")
    assert cls.family == "Schedulers" and not cls.privileged
    params = check_method_params("Spark-speculation", {})
    assert params == {
        **SPARK4,
        "task_duration_threshold": None,
        "executor_slots": 1,
        "efficiency": False,
        "process_rate_multiplier": 0.75,
        "long_run_task_factor": 2.0,
        "records_column": "records_read_rate",
    }


def test_median_is_sparks_upper_median():
    assert spark_median(np.array([9.0, 1.0, 5.0])) == 5.0
    # an even count: sorted[n // 2], not the mean of the two middle values (2.5)
    assert spark_median(np.array([10.0, 1.0, 3.0, 2.0])) == 3.0


def test_nothing_before_the_quantile_of_tasks_succeeded():
    # 10 tasks, quantile 0.9: 9 must have succeeded; 8 have, so even a task 100x the median waits
    runtime = np.array([500.0])
    assert not speculatable(runtime, np.ones(8), 10, **SPARK4).any()
    flags = speculatable(runtime, np.ones(9), 10, **SPARK4)
    np.testing.assert_array_equal(flags, [True])
    # quantile 0: at least one success is still needed (Spark: max(floor(q x n), 1))
    assert not speculatable(runtime, np.zeros(0), 10, **{**SPARK4, "quantile": 0.0}).any()


def test_threshold_is_multiplier_times_median_strictly_exceeded():
    # 9 successes of durations 1..9 s: median 5, threshold 3 x 5 = 15 s, strictly more to flag
    flags = speculatable(np.array([14.9, 15.0, 15.01, 100.0]), np.arange(1.0, 10.0), 10, **SPARK4)
    np.testing.assert_array_equal(flags, [False, False, True, True])
    # Spark 3's settings: 1.5 x median, once 75 % succeeded (floor(0.75 x 10) = 7)
    spark3 = {**SPARK4, "multiplier": 1.5, "quantile": 0.75}
    # durations 1..7: median 4, threshold 1.5 x 4 = 6 s
    flags = speculatable(np.array([5.9, 6.0, 6.1]), np.arange(1.0, 8.0), 10, **spark3)
    np.testing.assert_array_equal(flags, [False, False, True])


def test_min_task_runtime_floors_the_threshold():
    # median 0.01 s: 3 x 0.01 = 0.03 s < minTaskRuntime 0.1 s, which then is the threshold
    runtime = np.array([0.05, 0.09, 0.11])
    np.testing.assert_array_equal(
        speculatable(runtime, np.full(9, 0.01), 10, **SPARK4), [False, False, True]
    )
    no_floor = {**SPARK4, "min_task_runtime": 0.0}
    np.testing.assert_array_equal(
        speculatable(runtime, np.full(9, 0.01), 10, **no_floor), [True, True, True]
    )


def test_one_task_and_the_duration_threshold():
    # a single task is never speculated, unless task.duration.threshold is set
    assert not speculatable(np.array([1e6]), np.zeros(0), 1, **SPARK4).any()
    custom = {**SPARK4, "task_duration_threshold": 30.0}
    np.testing.assert_array_equal(
        speculatable(np.array([29.0, 31.0]), np.zeros(0), 1, **custom), [False, True]
    )
    # the duration threshold only before the quantile is reached, for stages no larger than
    # an executor's slots
    assert not speculatable(np.array([31.0]), np.zeros(0), 4, **custom).any()
    np.testing.assert_array_equal(
        speculatable(np.array([31.0]), np.zeros(0), 4, **custom, executor_slots=4), [True]
    )


def checkpoint(running_elapsed, finished_latency, running=None):
    n_fin, n_run = len(finished_latency), len(running_elapsed)
    return Checkpoint(
        time=100.0,
        index=1,
        first_prediction=False,
        finished_tasks=np.arange(n_fin),
        finished_features=np.zeros((n_fin, 1)),
        finished_latency=np.asarray(finished_latency, dtype=float),
        running_tasks=np.arange(n_fin, n_fin + n_run) if running is None else running,
        running_features=np.zeros((n_run, 1)),
        running_elapsed=np.asarray(running_elapsed, dtype=float),
    )


def test_the_method_takes_the_median_of_successful_tasks_only():
    # 4 tasks, quantile 0.5: 2 successes (2 s, 4 s) -> median sorted[1] = 4 s, threshold 12 s.
    # The two running tasks (elapsed 11 s and 13 s) do not enter the median, and tau (5 s) is
    # not used: a task past tau but under the threshold is not flagged.
    method = get_method("Spark-speculation")({"quantile": 0.5})
    method.start_job(
        JobInfo(job_id="j", n_tasks=4, feature_names=("x",), straggler_threshold=5.0, seed=1)
    )
    flags = method.predict(checkpoint([11.0, 13.0], [2.0, 4.0]))
    np.testing.assert_array_equal(flags, [False, True])


def test_an_entry_may_name_the_method_it_runs():
    assert method_entry("Spark-speculation", {"multiplier": 2}) == (
        "Spark-speculation",
        {"multiplier": 2},
    )
    assert method_entry("NURD", None) == ("NURD", {})
    name, params = method_entry(
        "Spark 3 speculation", {"method": "Spark-speculation", "multiplier": 1.5, "quantile": 0.75}
    )
    assert (name, params) == ("Spark-speculation", {"multiplier": 1.5, "quantile": 0.75})
    check_method_params(name, params)  # the named method's own parameters
    with pytest.raises(ValueError, match="cannot name a folder"):
        method_entry("a/b", {"method": "LATE"})
    with pytest.raises(ValueError, match="the label is the name of another method"):
        method_entry("NURD", {"method": "LATE"})


def test_a_label_names_the_rows_and_seeds_the_method():
    from jobfactory import LAST, make_job

    from stragglers.replay.core import ReplaySettings
    from stragglers.replay.runner import run_method_on_jobs

    job = make_job(n_tasks=60, seed=3)
    settings = ReplaySettings(grid_origin=600.0, checkpoint_interval=300.0)
    cls = get_method("Spark-speculation")
    runs = {
        label: run_method_on_jobs(iter([job]), cls, params, settings, LAST, 1, "d", label=label)
        for label, params in [
            ("Spark-speculation", {}),
            ("Spark 3 speculation", {"multiplier": 1.5, "quantile": 0.75}),
        ]
    }
    for label, (tasks, jobs) in runs.items():
        assert set(tasks["method"]) == {label} and set(jobs["method"]) == {label}
        assert set(jobs["family"]) == {"Schedulers"} and (jobs["status"] == "ok").all()
    # Spark 3's lower multiplier and quantile flag at least as many tasks as Spark 4's
    flagged = {label: int(t["flagged"].sum()) for label, (t, _) in runs.items()}
    assert flagged["Spark 3 speculation"] >= flagged["Spark-speculation"]


@pytest.mark.parametrize(
    "methods,message",
    [
        ("{a/b: {method: LATE}}", "cannot name a folder of results/"),
        (
            "{Spark 2: {method: Spark-speculation, multipler: 2}}",
            "method Spark-speculation: unknown parameter 'multipler'; known: efficiency, "
            "executor_slots, long_run_task_factor, min_task_runtime, multiplier, "
            "process_rate_multiplier, quantile, records_column, task_duration_threshold "
            "(config methods.Spark 2)",
        ),
        ("{Spark 2: {method: Spark}}", "config methods: unknown method(s) ['Spark']"),
    ],
)
def test_the_workflow_checks_labelled_entries_when_it_loads(tmp_path, methods, message):
    from test_config_params import DEFAULT, dry_run

    dry = dry_run(tmp_path, *DEFAULT, "--config", f"methods={methods}")
    assert dry.returncode != 0
    assert message in dry.stdout, dry.stdout[-2000:]
    assert "Building DAG of jobs" not in dry.stdout


def test_the_efficiency_check_spares_tasks_reading_at_the_stage_rate():
    """Spark 3.4+: past the threshold, a task is speculated only if it reads records slower
    than 0.75 x the stage's rate (records over time of the successful tasks) or has run longer
    than 2 x the threshold; a task whose rate is unknown reads at 0; a stage reading no
    records is not checked (Spark: only a positive stage rate is)."""
    succeeded = np.array([1.0, 1.0, 1.0, 3.0])  # threshold 3 x 1 = 3 s (upper median 1)
    # stage rate: (100 x 1 x 3 + 20 x 3) / 6 = 60 records/s; 0.75 of it: 45
    succeeded_rate = np.array([100.0, 100.0, 100.0, 20.0])
    runtime = np.array([4.0, 4.0, 4.0, 7.0, 2.0])
    running_rate = np.array([44.0, 46.0, np.nan, 100.0, 1.0])
    check = (running_rate, succeeded_rate, 0.75, 2.0)
    flags = speculatable(runtime, succeeded, 5, **{**SPARK4, "quantile": 0.5}, efficiency=check)
    np.testing.assert_array_equal(flags, [True, False, True, True, False])
    off = speculatable(runtime, succeeded, 5, **{**SPARK4, "quantile": 0.5})
    np.testing.assert_array_equal(off, [True, True, True, True, False])
    no_records = (np.zeros(5), np.zeros(4), 0.75, 2.0)
    flags = speculatable(
        runtime, succeeded, 5, **{**SPARK4, "quantile": 0.5}, efficiency=no_records
    )
    np.testing.assert_array_equal(flags, off)


def test_the_efficiency_check_needs_its_column_and_is_off_by_default():
    def checkpoint(features):
        return Checkpoint(
            time=10.0,
            index=1,
            first_prediction=True,
            finished_tasks=np.arange(4),
            finished_features=np.c_[np.zeros(4), [100.0, 100.0, 100.0, 20.0]][:, :features],
            finished_latency=np.array([1.0, 1.0, 1.0, 3.0]),
            running_tasks=np.array([4]),
            running_features=np.array([[0.0, 46.0]])[:, :features],
            running_elapsed=np.array([4.0]),
        )

    def flags(params, names):
        method = get_method("Spark-speculation")({"quantile": 0.5, **params})
        info = JobInfo("j", 5, names, straggler_threshold=1.0, seed=0)
        method.start_job(info)
        return method.predict(checkpoint(len(names))).tolist()

    with_rates = ("cpu", "records_read_rate")
    assert flags({}, with_rates) == [True]  # off: past the threshold is enough
    assert flags({"efficiency": True}, with_rates) == [False]  # 46 >= 0.75 x 60
    assert flags({"efficiency": True}, ("cpu",)) == [True]  # no column: as off
