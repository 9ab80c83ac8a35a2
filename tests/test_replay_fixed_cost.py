"""The replay's cheaper per-job and per-checkpoint code against the library code it replaces,
value for value (and dtype, and memory layout where numpy's reductions depend on it): reading
a converted job without pandas (job_from_table / job_from_frame), the accumulator's indexed
adds (np.add.at), fill_missing without the means it never reads, and the task rows built once
per shard (tasks_frame / pd.concat of one frame per job).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jobfactory import FEATURES, LAST, make_job, make_job_frame

from stragglers.formats import features as features_module
from stragglers.formats.features import FeatureAccumulator, fill_missing
from stragglers.formats.jobs import (
    TASK_FACT_COLUMNS,
    WINDOW_COLUMNS,
    ConvertedFileError,
    job_from_frame,
    job_from_table,
    launch_columns,
    read_converted,
    read_job,
)
from stragglers.replay.runner import per_job_concat, tasks_frame

MACHINE = ["m_load", "m_mem"]


def assert_jobs_identical(new, old) -> None:
    """Every field equal: values (signs of zero, NaN where NaN), dtypes, shapes, layouts."""
    for field in dataclasses.fields(old):
        a, b = getattr(new, field.name), getattr(old, field.name)
        if not isinstance(b, np.ndarray):
            assert a == b, field.name
            continue
        assert isinstance(a, np.ndarray), field.name
        assert a.dtype == b.dtype and a.shape == b.shape, field.name
        assert a.flags.c_contiguous == b.flags.c_contiguous, field.name
        assert a.flags.f_contiguous == b.flags.f_contiguous, field.name
        if b.dtype == object:
            assert [type(x) for x in a] == [type(x) for x in b], field.name
            assert a.tolist() == b.tolist(), field.name
        else:
            np.testing.assert_array_equal(a, b, err_msg=field.name)
            if b.dtype.kind == "f":
                assert np.array_equal(np.signbit(a), np.signbit(b)), field.name


def awkward_frame(seed: int, n_tasks: int) -> pd.DataFrame:
    """A converted job's rows shuffled, with ties in every sort key (several windows of a
    task at one available_from, equal starts), NaN and -0.0 features, NaN in the keys the
    sort orders last, task facts that differ between a task's rows (the first row in the
    sorted order wins) and machine state columns."""
    rng = np.random.default_rng(seed)
    frame = make_job_frame(n_tasks, seed=seed)
    n = len(frame)
    frame["available_from"] = np.round(frame["available_from"] / 900.0) * 900.0  # ties
    tied = rng.random(n) < 0.2
    frame.loc[tied, "window_start"] = frame.loc[tied, "available_from"] - 300.0
    frame.loc[rng.random(n) < 0.1, "cpu"] = np.nan
    frame.loc[rng.random(n) < 0.1, "io"] = -0.0
    frame.loc[rng.random(n) < 0.05, "window_start"] = np.nan
    frame.loc[rng.random(n) < 0.02, "available_from"] = -0.0
    frame["latency"] = frame["latency"] + rng.integers(0, 2, n)  # not constant per task
    frame["task_id"] = [f"t{t}-{rng.integers(3)}" for t in frame["task"]]
    for name in MACHINE + launch_columns(MACHINE):
        frame[name] = rng.normal(size=n)
        frame.loc[rng.random(n) < 0.1, name] = np.nan
    frame["task"] = frame["task"].astype(np.int32)
    frame["evictions"] = rng.integers(0, 3, n).astype(np.int32)
    frame["failures"] = rng.integers(0, 3, n).astype(np.int32)
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("machine_state", [[], MACHINE])
def test_job_from_table_equals_job_from_frame(tmp_path, seed, machine_state):
    n_tasks = [1, 2, 3, 7, 20, 40, 60, 90][seed]
    frame = awkward_frame(seed, n_tasks)
    path = tmp_path / "job.parquet"
    frame.to_parquet(path, index=False)
    columns = WINDOW_COLUMNS + TASK_FACT_COLUMNS + FEATURES
    columns += machine_state + launch_columns(machine_state)
    old = job_from_frame("j", read_converted(path, columns), FEATURES, machine_state)
    table = pq.read_table(path, columns=columns)
    new = job_from_table("j", table, FEATURES, machine_state)
    assert new is not None  # the fast route, not the fallback
    assert_jobs_identical(new, old)
    assert_jobs_identical(read_job(path, "j", FEATURES, machine_state), old)


def test_job_from_table_several_chunks_and_large_strings():
    frame = awkward_frame(3, 30)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = pa.concat_tables([table.slice(0, 50), table.slice(50)])  # two chunks
    table = table.set_column(
        table.column_names.index("task_id"),
        "task_id",
        table["task_id"].cast(pa.large_string()),
    )
    old = job_from_frame("j", frame, FEATURES)
    assert_jobs_identical(job_from_table("j", table, FEATURES), old)


def test_job_from_table_leaves_other_types_to_pandas(tmp_path):
    frame = awkward_frame(1, 10)
    cases = {
        "a null task id": frame.assign(task_id=[None] + frame["task_id"].tolist()[1:]),
        "an integer feature": frame.assign(cpu=np.arange(len(frame))),
        "a float32 column": frame.assign(latency=frame["latency"].astype(np.float32)),
        "integer task ids": frame.assign(task_id=np.arange(len(frame))),
    }
    for what, case in cases.items():
        table = pa.Table.from_pandas(case, preserve_index=False)
        assert job_from_table("j", table, FEATURES) is None, what
        path = tmp_path / "case.parquet"
        case.to_parquet(path, index=False)
        old = job_from_frame(
            "j", read_converted(path, WINDOW_COLUMNS + TASK_FACT_COLUMNS + FEATURES), FEATURES
        )
        assert_jobs_identical(read_job(path, "j", FEATURES), old)


def test_job_from_table_sparse_task_positions():
    frame = awkward_frame(2, 10)
    frame = frame[frame["task"] != 4]
    table = pa.Table.from_pandas(frame, preserve_index=False)
    with pytest.raises(ValueError, match="not dense"):
        job_from_frame("j", frame, FEATURES)
    with pytest.raises(ValueError, match="not dense"):
        job_from_table("j", table, FEATURES)


def test_read_job_names_a_missing_or_damaged_file(tmp_path):
    with pytest.raises(ConvertedFileError, match="missing"):
        read_job(tmp_path / "none.parquet", "j", FEATURES)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(ConvertedFileError, match="not a readable Parquet file"):
        read_job(bad, "j", FEATURES)
    path = tmp_path / "job.parquet"
    make_job_frame(5).drop(columns=["io"]).to_parquet(path, index=False)
    with pytest.raises(ConvertedFileError, match=r"columns \['io'\] missing"):
        read_job(path, "j", FEATURES)


class AddAtAccumulator(FeatureAccumulator):
    """The accumulator as it was: every step's sums through np.add.at, the last values
    through np.ix_."""

    def _add_windows(self, tasks: np.ndarray, windows: slice) -> None:
        np.add.at(self.weighted_sum, tasks, self._weighted_values[windows])
        np.add.at(self.weight, tasks, self._weights[windows])
        np.add.at(self.n_windows, tasks, 1)

    def features(self, tasks: np.ndarray) -> np.ndarray:
        if self.divide_by_final_latency:
            return self.weighted_sum[tasks] / self.job.latency[tasks, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            out = self.weighted_sum[tasks] / self.weight[tasks]
        out[:, self.is_last] = self.last_value[np.ix_(tasks, np.flatnonzero(self.is_last))]
        return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("divide", [False, True])
def test_accumulator_equals_add_at(seed, divide):
    job = make_job(n_tasks=[1, 2, 5, 30, 80, 150][seed], seed=seed)
    rng = np.random.default_rng(seed)
    values = job.window_features.copy()
    values[rng.random(values.shape) < 0.1] = np.nan
    values[rng.random(values.shape) < 0.05] = -0.0
    job = dataclasses.replace(job, window_features=values)
    last = LAST if seed % 2 else np.zeros(len(FEATURES), dtype=bool)
    new = FeatureAccumulator(job, last, divide_by_final_latency=divide)
    old = AddAtAccumulator(job, last, divide_by_final_latency=divide)
    ends = np.unique(job.available_from)
    # steps of one available_from (each task once) and of several (a task twice)
    times = np.concatenate([ends[:5], ends[5::3], [np.inf]]) if len(ends) > 5 else ends
    tasks = np.arange(job.n_tasks)
    for t in times:
        new.advance(t)
        old.advance(t)
        for name in ("weighted_sum", "weight", "n_windows", "last_value"):
            a, b = getattr(new, name), getattr(old, name)
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
            assert np.array_equal(np.signbit(a), np.signbit(b))
        subset = rng.permutation(tasks)[: max(1, job.n_tasks // 2)]
        for chosen in (tasks, subset, tasks[:0]):
            a, b = new.features(chosen), old.features(chosen)
            assert a.dtype == b.dtype and a.shape == b.shape
            assert a.flags.c_contiguous == b.flags.c_contiguous
            np.testing.assert_array_equal(a, b)


def test_accumulator_add_route_is_add_at():
    """The indexed += route against np.add.at on one step, each task once and repeated."""
    rng = np.random.default_rng(0)
    for tasks in (np.array([0, 2, 5]), np.array([3]), np.array([1, 1, 4, 1]), np.array([4, 2])):
        start = rng.normal(size=(6, 3))
        added = rng.normal(size=(len(tasks), 3)) * 1e-17  # rounding makes the order visible
        expected = start.copy()
        np.add.at(expected, tasks, added)
        job = make_job(n_tasks=6)
        accumulator = FeatureAccumulator(job, np.zeros(len(FEATURES), dtype=bool))
        accumulator.weighted_sum = start.copy()
        accumulator._weighted_values = added
        accumulator.weight = np.zeros((6, 3))
        accumulator._weights = np.ones((len(tasks), 3))
        accumulator.window_values = np.zeros((len(tasks), len(FEATURES)))
        accumulator.job = dataclasses.replace(
            job,
            window_task=tasks,
            available_from=np.zeros(len(tasks)),
        )
        accumulator.advance(0.0)
        np.testing.assert_array_equal(accumulator.weighted_sum, expected)


def nanmean_fill_missing(*blocks: np.ndarray) -> list[np.ndarray]:
    """fill_missing as it was: the column means always computed."""
    stacked = np.vstack(blocks) if blocks else np.empty((0, 0))
    with np.errstate(invalid="ignore"):
        means = np.nanmean(stacked, axis=0) if len(stacked) else np.zeros(stacked.shape[1])
    means = np.where(np.isnan(means), 0.0, means)
    return [np.where(np.isnan(b), means, b) for b in blocks]


@pytest.mark.parametrize("seed", range(10))
def test_fill_missing_equals_nanmean_route(seed):
    rng = np.random.default_rng(seed)
    d = [1, 3, 5][seed % 3]
    shapes = [(rng.integers(0, 6), d), (rng.integers(0, 6), d)]
    blocks = [rng.normal(size=shape) for shape in shapes]
    if seed % 2:
        for block in blocks:
            block[rng.random(block.shape) < 0.3] = np.nan
    if seed == 4:
        blocks[0][:] = np.nan  # a column entirely missing
    if seed == 6:
        blocks = [np.asfortranarray(b) for b in blocks]
    if seed == 8:
        blocks[1] = blocks[1] * -0.0
    for a, b in zip(fill_missing(*blocks), nanmean_fill_missing(*blocks)):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.flags.c_contiguous == b.flags.c_contiguous
        assert a.flags.f_contiguous == b.flags.f_contiguous
        np.testing.assert_array_equal(a, b)
        assert np.array_equal(np.signbit(a), np.signbit(b))
    assert features_module.fill_missing is fill_missing


def job_columns(rng, job_id: str, n: int, dtype=np.float64) -> dict:
    return {
        "dataset": "d",
        "method": "M",
        "job_id": job_id,
        "task": np.arange(n, dtype=np.int32),
        "latency": rng.normal(size=n).astype(dtype),
        "is_straggler": rng.random(n) < 0.5,
        "flag_time": np.where(rng.random(n) < 0.5, np.nan, rng.normal(size=n)),
    }


def test_tasks_frame_equals_concat():
    rng = np.random.default_rng(0)
    for sizes in ([3], [0], [2, 0, 5], [1, 1, 1, 7], [0, 0]):
        jobs = [job_columns(rng, f"j{i}", n) for i, n in enumerate(sizes)]
        new, old = tasks_frame(jobs), per_job_concat(jobs)
        pd.testing.assert_frame_equal(new, old, check_exact=True)
        assert list(new.dtypes) == list(old.dtypes)
        pd.testing.assert_index_equal(new.index, old.index, exact=True)
    # a column whose dtype differs between jobs takes pandas' own casts
    jobs = [job_columns(rng, "a", 3), job_columns(rng, "b", 2, np.float32)]
    pd.testing.assert_frame_equal(tasks_frame(jobs), per_job_concat(jobs), check_exact=True)
