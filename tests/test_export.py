"""The round trip: a converted dataset exported as a task table (python -m
stragglers.convert.export) and converted back gives job files whose features, latencies and
checkpoints equal the native conversion's, column by column: generated Google (task_usage
and events-only) and Alibaba traces, and the real rows in ../shared."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from stragglers.convert.export import export_task_table, main
from stragglers.convert.one_process import convert_alibaba, convert_google, convert_google_events
from stragglers.convert.tasks_table import convert_tasks_table
from stragglers.formats.datasets import feature_columns, last_columns
from stragglers.formats.jobs import iter_shard_jobs
from stragglers.replay.core import ReplaySettings
from stragglers.replay.wallclock import iterate_checkpoints
from stragglers.traces.generate import (
    AlibabaGeneratorConfig,
    GoogleGeneratorConfig,
    generate_alibaba,
    generate_google,
)

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "google-2011"
TASK_COLUMNS = ["task_id", "task_start", "task_end", "latency", "machine_id"]
TASK_COUNTS = ["evictions", "failures"]
WINDOW_COLUMNS = ["window_task", "window_start", "window_end", "available_from"]


def round_trip(converted: Path, work: Path, csv: bool = False) -> Path:
    export_task_table(converted, work / "table", csv=csv)
    back = work / "back"
    convert_tasks_table(work / "table", back, dataset="back", n_shards=3, min_tasks=1)
    return back


def assert_same_jobs(native_dir: Path, kind: str, back_dir: Path, grid: ReplaySettings) -> int:
    """Every job of both conversions equal, column by column, and so are their checkpoints;
    features the task table adds (EV / FL where the native kind has none) are zero."""
    native = {job.job_id: job for job in iter_shard_jobs(native_dir, kind, None)}
    back = {job.job_id: job for job in iter_shard_jobs(back_dir, "tasks-table", None)}
    assert sorted(native) == sorted(back) and native
    names = feature_columns(kind)
    back_names = feature_columns("tasks-table", back_dir)
    added = [i for i, name in enumerate(back_names) if name not in names]
    assert [back_names[i] for i in added] == [
        n for n in ("evictions_so_far", "failures_so_far") if n not in names
    ]
    position = [back_names.index(name) for name in names]
    assert np.array_equal(last_columns("tasks-table", back_dir)[position], last_columns(kind))
    evictions = checkpoints = 0
    for job_id, a in native.items():
        b = back[job_id]
        for column in TASK_COLUMNS + TASK_COUNTS + WINDOW_COLUMNS:
            assert np.array_equal(getattr(a, column), getattr(b, column)), (job_id, column)
        for k, name in enumerate(names):
            assert np.array_equal(
                a.window_features[:, k], b.window_features[:, position[k]], equal_nan=True
            ), (job_id, name)
        assert not b.window_features[:, added].any()
        evictions += int(a.evictions.sum() + a.failures.sum())
        none = np.zeros(a.n_tasks, dtype=bool)
        points_a = list(iterate_checkpoints(a, grid, last_columns(kind), none, none))
        points_b = list(
            iterate_checkpoints(b, grid, last_columns("tasks-table", back_dir), none, none)
        )
        assert len(points_a) == len(points_b)
        checkpoints += len(points_a)
        for p, q in zip(points_a, points_b):
            assert (p.time, p.index, p.first_prediction) == (q.time, q.index, q.first_prediction)
            for name in ("finished_tasks", "running_tasks", "finished_latency", "running_elapsed"):
                assert np.array_equal(getattr(p, name), getattr(q, name)), (job_id, p.time, name)
            for side in ("finished_features", "running_features"):
                assert np.array_equal(
                    getattr(p, side), getattr(q, side)[:, position], equal_nan=True
                ), (job_id, p.time, side)
    assert checkpoints > 0
    return evictions


@pytest.fixture(scope="module")
def google_raw(tmp_path_factory):
    raw = tmp_path_factory.mktemp("google") / "raw"
    # 4 jobs, seed 7: some kept tasks were evicted, so attempts are rebuilt from EV counts
    generate_google(raw, GoogleGeneratorConfig.from_dict({"n_jobs": 4, "seed": 7}))
    return raw


def test_round_trip_generated_google(google_raw, tmp_path):
    convert_google(google_raw, tmp_path / "native", dataset="g", n_shards=2)
    back = round_trip(tmp_path / "native", tmp_path)
    grid = ReplaySettings(checkpoint_interval=300.0, grid_origin=600.0)
    assert assert_same_jobs(tmp_path / "native", "google-2011", back, grid) > 0


def test_round_trip_generated_google_events_via_csv(google_raw, tmp_path):
    convert_google_events(google_raw, tmp_path / "native", dataset="g", n_shards=2)
    back = round_trip(tmp_path / "native", tmp_path, csv=True)
    assert (tmp_path / "table" / "tasks.csv.gz").exists()
    grid = ReplaySettings(checkpoint_interval=300.0, grid_origin=600.0)
    assert_same_jobs(tmp_path / "native", "google-2011-events", back, grid)


def test_round_trip_generated_alibaba(tmp_path):
    generate_alibaba(tmp_path / "raw", AlibabaGeneratorConfig.from_dict({"n_jobs": 3, "seed": 5}))
    convert_alibaba(tmp_path / "raw", tmp_path / "native", dataset="a", n_shards=2)
    back = round_trip(tmp_path / "native", tmp_path)
    grid = ReplaySettings(checkpoint_interval=60.0, grid_origin=0.0)
    assert_same_jobs(tmp_path / "native", "alibaba-2018", back, grid)


@pytest.mark.slow  # ~40 s of CPU: 38 real jobs, 270,000 windows, every checkpoint compared
@pytest.mark.skipif(
    not (SHARED / "task_events").exists(), reason=f"real trace rows not available ({SHARED})"
)
def test_round_trip_real_rows(tmp_path):
    convert_google_events(
        SHARED,
        tmp_path / "native",
        dataset="real",
        n_shards=2,
        priorities=tuple(range(12)),
        window_seconds=60.0,
    )
    back = round_trip(tmp_path / "native", tmp_path)
    grid = ReplaySettings(checkpoint_interval=60.0, grid_origin=600.0)
    # the real rows have evicted and failed tasks: their attempts come from the EV/FL counts
    assert assert_same_jobs(tmp_path / "native", "google-2011-events", back, grid) > 0


def test_exported_attempts_and_command_line(tmp_path):
    """Hand-made converted job: a task evicted between its first two windows and failed after
    its last one; the command writes the same table as the function."""
    from stragglers.convert.common import write_manifest

    jobs = tmp_path / "conv" / "jobs" / "shard-0"
    jobs.mkdir(parents=True)
    frame = pd.DataFrame(
        {
            "task": np.array([0, 0, 0, 1], dtype=np.int32),
            "window_start": [0.0, 10.0, 20.0, 5.0],
            "window_end": [10.0, 20.0, 30.0, 15.0],
            "available_from": [10.0, 20.0, 30.0, 15.0],
            "cpu": [0.1, 0.2, 0.3, 0.4],
            "evictions_so_far": [0.0, 1.0, 1.0, 0.0],
            "failures_so_far": [0.0, 0.0, 0.0, 0.0],
            "task_id": ["7", "7", "7", "8"],
            "task_start": [0.0, 0.0, 0.0, 5.0],
            "task_end": [40.0, 40.0, 40.0, 15.0],
            "latency": [40.0, 40.0, 40.0, 10.0],
            "machine_id": ["m1", "m1", "m1", "m2"],
            "evictions": np.array([1, 1, 1, 0], dtype=np.int32),
            "failures": np.array([1, 1, 1, 0], dtype=np.int32),
        }
    )
    frame.to_parquet(jobs / "J.parquet", index=False)
    row = {"dataset": "d", "job_id": "J", "n_tasks": 2, "n_windows": 4, "shard": 0}
    row |= {"path": "jobs/shard-0/J.parquet", "job_start": 0.0, "job_end": 40.0}
    write_manifest(tmp_path / "conv", [pd.DataFrame([row])], [], kind="alibaba-2017", dataset="d")
    export_task_table(tmp_path / "conv", tmp_path / "a")
    attempts = pd.read_parquet(tmp_path / "a" / "tasks.parquet")
    assert attempts.values.tolist() == [
        ["J", "7", 0, 0.0, 20.0, "evicted", ""],
        ["J", "7", 1, 20.0, 40.0, "failed", ""],
        ["J", "7", 2, 40.0, 40.0, "finished", "m1"],
        ["J", "8", 0, 5.0, 15.0, "finished", "m2"],
    ]
    usage = pd.read_parquet(tmp_path / "a" / "usage.parquet")
    assert usage["attempt"].tolist() == [0, 0, 1, 0]
    assert list(usage.columns) == [
        "job_id",
        "task_id",
        "attempt",
        "window_start",
        "window_end",
        "available_from",
        "cpu",
    ]
    main([str(tmp_path / "conv"), str(tmp_path / "b")])
    for name in ("tasks.parquet", "usage.parquet"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "a" / name), pd.read_parquet(tmp_path / "b" / name)
        )
