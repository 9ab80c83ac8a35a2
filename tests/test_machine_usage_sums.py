"""The per-(machine, period) usage sums of the conversion's per-part job against independent
references: the straightforward algorithm they replaced (one (rows, 9) matrix of
contributions per chunk, sorted and `np.add.reduceat`-ed, the chunks' cells concatenated and
reduced again), which must give the same floats bit for bit; and a pandas groupby of the raw
rows, on a generated trace (the default configuration's size) and on the real rows in
../shared."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from stragglers.convert import machines
from stragglers.convert.google import prepare_google, spill_google_usage
from stragglers.formats import raw as schema
from stragglers.traces.generate import generate_google

PERIOD = machines.USAGE_PERIOD_US
SOURCES = list(machines.MACHINE_USAGE_SOURCES)
SHARED_GOOGLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "google-2011"


def matrix_partials(code, start, end, values):
    """The replaced per-chunk algorithm, written out plainly: every row split by period,
    its contributions stacked, sorted by (machine, period) and summed with reduceat."""
    first = start // PERIOD
    n_periods = np.maximum((end - 1) // PERIOD - first + 1, 1)
    row = np.repeat(np.arange(len(code)), n_periods)
    offset = np.arange(len(row)) - np.repeat(np.cumsum(n_periods) - n_periods, n_periods)
    period = first[row] + offset
    overlap = np.minimum(end[row], (period + 1) * PERIOD) - np.maximum(start[row], period * PERIOD)
    weight = np.maximum(overlap, 0) / PERIOD
    present = ~np.isnan(values[row])
    contributions = np.column_stack(
        [weight, np.where(present, values[row], 0.0) * weight[:, None], present * weight[:, None]]
    )
    keys = machines.composite_key(code[row], period)
    order = np.argsort(keys, kind="stable")
    keys, contributions = keys[order], contributions[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return keys[starts], np.add.reduceat(contributions, starts, axis=0)


def matrix_accumulate(chunks):
    """The replaced accumulator: every chunk's cells concatenated, then reduced once."""
    pieces = [matrix_partials(*chunk) for chunk in chunks]
    keys = np.concatenate([k for k, _ in pieces])
    sums = np.vstack([s for _, s in pieces])
    order = np.argsort(keys, kind="stable")
    keys, sums = keys[order], sums[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return keys[starts], np.add.reduceat(sums, starts, axis=0)


def random_rows(rng, n, n_machines, first_period, n_periods):
    code = rng.integers(0, n_machines, n)
    start = (first_period * PERIOD + rng.integers(0, n_periods * PERIOD, n)).astype(np.int64)
    # mostly windows inside a period, some crossing one or several boundaries
    length = np.where(
        rng.random(n) < 0.8, rng.integers(1, PERIOD // 2, n), rng.integers(1, 3 * PERIOD, n)
    )
    values = rng.random((n, len(SOURCES)))
    values[rng.random(values.shape) < 0.05] = np.nan
    return code, start, start + length, values


@pytest.mark.parametrize(
    "n_machines, n_periods",
    [(50, 3), (12_500, 4), (3, 4_000)],  # few cells per row, a real part's shape, a sparse grid
)
@pytest.mark.parametrize("compact_rows", [4_000_000, 3_000], ids=["one merge", "compacted"])
def test_streamed_sums_equal_the_matrix_algorithm_bit_for_bit(
    n_machines, n_periods, compact_rows, monkeypatch
):
    """Also when the pieces are compacted as they come (a cell's sum stays a sum in row order)
    and when the result is asked for twice (it replaces the pieces)."""
    monkeypatch.setattr(machines.MachineUsageAccumulator, "COMPACT_ROWS", compact_rows)
    rng = np.random.default_rng(n_machines)
    chunks = [
        random_rows(rng, n, n_machines, 10 + k, n_periods) for k, n in enumerate((7_000, 5_000, 1))
    ]
    accumulator = machines.MachineUsageAccumulator()
    for chunk in chunks:
        accumulator.add(*chunk)
    keys, sums = accumulator.result()
    expected_keys, expected_sums = matrix_accumulate(chunks)
    np.testing.assert_array_equal(keys, expected_keys)
    assert sums.tobytes() == expected_sums.tobytes()
    again_keys, again_sums = accumulator.result()
    np.testing.assert_array_equal(again_keys, expected_keys)
    assert again_sums.tobytes() == expected_sums.tobytes()


def groupby_sums(task_usage, timeline):
    """(machine code, period) -> [task time, usage sums, present task times] by pandas,
    from the raw rows (every job), each row split by period with a plain explode."""
    rows = task_usage.dropna(subset=["start_time", "end_time", "machine_id"]).copy()
    rows = rows[rows.end_time > rows.start_time]
    rows = rows[rows.machine_id.isin(timeline.machines)]
    rows["code"] = np.searchsorted(timeline.machines, rows.machine_id.astype(np.int64))
    rows["period"] = [
        list(range(int(s) // PERIOD, (int(e) - 1) // PERIOD + 1))
        for s, e in zip(rows.start_time, rows.end_time)
    ]
    rows = rows.explode("period")
    rows["period"] = rows["period"].astype(np.int64)
    low, high = rows.period * PERIOD, (rows.period + 1) * PERIOD
    rows["w"] = (np.minimum(rows.end_time, high) - np.maximum(rows.start_time, low)) / PERIOD
    columns = {"tasks": rows.w}
    for source in SOURCES:
        columns[f"{source}_sum"] = rows[source].fillna(0.0) * rows.w
    for source in SOURCES:
        columns[f"{source}_present"] = rows[source].notna() * rows.w
    frame = pd.DataFrame(columns).assign(code=rows.code, period=rows.period)
    grouped = frame.groupby(["code", "period"], sort=True).sum()
    keys = machines.composite_key(
        grouped.index.get_level_values(0), grouped.index.get_level_values(1)
    )
    return keys, grouped.to_numpy()


def read_usage(parts):
    return pd.concat(
        [pd.read_csv(p, header=None, names=schema.GOOGLE_TASK_USAGE) for p in parts],
        ignore_index=True,
    )


def assert_spilled_sums_match_groupby(raw, tmp_path, priorities):
    prepared = tmp_path / "prepared"
    prepare_google(
        sorted((raw / "task_events").glob("*.csv.gz")),
        prepared,
        dataset="d",
        n_shards=1,
        priorities=priorities,
        machine_event_parts=sorted((raw / "machine_events").glob("*.csv.gz")),
    )
    timeline = machines.MachineTimeline.load(prepared / "machine_timeline.npz")
    parts = sorted((raw / "task_usage").glob("*.csv.gz"))
    for k, part in enumerate(parts):
        spill = tmp_path / f"spill-{k}"
        spill_google_usage([part], prepared, spill, dataset="d")
        keys = np.load(spill / machines.USAGE_KEYS_FILE)
        sums = np.load(spill / machines.USAGE_SUMS_FILE)
        expected_keys, expected_sums = groupby_sums(read_usage([part]), timeline)
        assert len(keys) > 100
        np.testing.assert_array_equal(keys, expected_keys)
        np.testing.assert_allclose(sums, expected_sums, rtol=1e-12, atol=1e-15)


def test_spilled_sums_match_a_groupby_on_the_default_sized_generated_trace(tmp_path):
    raw = tmp_path / "raw"
    generate_google(raw, {"n_jobs": 30, "seed": 20220301})  # the hand-set google-synthetic
    assert_spilled_sums_match_groupby(raw, tmp_path, (9, 10, 11))


@pytest.mark.skipif(not SHARED_GOOGLE.exists(), reason="../shared/data/google-2011 is absent")
def test_spilled_sums_match_a_groupby_on_the_real_rows(tmp_path):
    # the real task_usage rows (first 10,000 of part 0) on the real machines
    assert_spilled_sums_match_groupby(SHARED_GOOGLE, tmp_path, tuple(range(12)))
