"""Machine state (stragglers.convert.machines): hand counts, a brute force on a generated trace, the
converted columns, missing tables and unknown machines, and what the replay hands a method."""

import gzip

import numpy as np
import pandas as pd
import pytest
from test_convert import trace  # noqa: F401  (fixture: a hand-made two-part trace)

from stragglers.convert import machines
from stragglers.convert.layout import raw_layout
from stragglers.convert.one_process import convert_alibaba, convert_google, convert_google_events
from stragglers.formats import raw as schema
from stragglers.formats.datasets import feature_columns, last_columns, machine_state_columns
from stragglers.formats.jobs import read_job
from stragglers.methods.base import Method
from stragglers.replay.core import ReplaySettings
from stragglers.replay.runner import replay_job
from stragglers.traces.generate import generate_alibaba, generate_google

SCHEDULE, EVICT, FAIL, FINISH = 1, 2, 3, 4
COLUMNS = list(machines.MACHINE_STATE_COLUMNS)


def events_frame(rows):
    frame = pd.DataFrame(
        rows,
        columns=[
            "timestamp",
            "job_id",
            "task_index",
            "event_type",
            "machine_id",
            "cpu_request",
            "memory_request",
        ],
    )
    return frame.sort_values(["job_id", "task_index", "timestamp"], kind="stable").reset_index(
        drop=True
    )


@pytest.fixture
def timeline():
    """Machine 1: task (1,0) runs 10-20 (evicted), task (1,1) 15-30 (fails), task (1,2) from
    35 to the horizon (100). Machine 2: task (1,0)'s second attempt 25-40. Capacities: machine
    1 ADDed at 0 (0.5 CPU, 0.25 memory), memory UPDATEd to 0.5 at 28; machine 2 ADDed at 0,
    REMOVEd at 38."""
    events = events_frame(
        [
            (10, 1, 0, SCHEDULE, 1, 0.1, 0.2),
            (20, 1, 0, EVICT, 1, 0.1, 0.2),
            (25, 1, 0, SCHEDULE, 2, 0.1, 0.2),
            (40, 1, 0, FINISH, 2, 0.1, 0.2),
            (15, 1, 1, SCHEDULE, 1, 0.3, 0.1),
            (30, 1, 1, FAIL, 1, 0.3, 0.1),
            (35, 1, 2, SCHEDULE, 1, np.nan, 0.05),
        ]
    )
    machine_events = pd.DataFrame(
        {
            "timestamp": [0, 0, 28, 38],
            "machine_id": [1, 2, 1, 2],
            "event_type": [0, 0, 2, 1],
            "cpus": [0.5, 1.0, 0.5, np.nan],
            "memory": [0.25, 0.75, 0.5, np.nan],
        }
    )
    counts = {}
    built = machines.build_timeline(events, machine_events, horizon_us=100, counts=counts)
    assert counts["attempts_without_request"] == 1
    return built


def test_state_matches_a_hand_count(timeline):
    query_machine = np.array([1, 1, 1, 1, 1, 2, 2, 2, 1])
    query_time = np.array([9, 10, 16, 20, 36, 24, 30, 39, 100])
    expected = np.array(
        [
            # running, cpu, memory, evictions, failures, cpus, memory capacity
            [0, 0.0, 0.0, 0, 0, 0.5, 0.25],
            [1, 0.1, 0.2, 0, 0, 0.5, 0.25],  # a SCHEDULE at t counts at t
            [2, 0.4, 0.3, 0, 0, 0.5, 0.25],
            [1, 0.3, 0.1, 1, 0, 0.5, 0.25],  # the evicted attempt has ended at 20
            [1, 0.0, 0.05, 1, 1, 0.5, 0.5],  # missing CPU request counts 0; memory updated
            [0, 0.0, 0.0, 0, 0, 1.0, 0.75],
            [1, 0.1, 0.2, 0, 0, 1.0, 0.75],
            [1, 0.1, 0.2, 0, 0, np.nan, np.nan],  # removed at 38 (its attempt runs on)
            [0, 0.0, 0.0, 1, 1, 0.5, 0.5],  # open attempts end at the horizon
        ]
    )
    np.testing.assert_allclose(timeline.state(query_machine, query_time), expected, atol=1e-12)


def test_unknown_and_missing_machines_are_nan(timeline):
    state = timeline.state(np.array([99.0, np.nan, 1.0]), np.array([20, 20, 20]))
    assert np.isnan(state[:2]).all()
    assert not np.isnan(state[2]).any()


def test_launch_state_excludes_the_task_itself(timeline):
    # task (1,1) starts at 15 on machine 1: just before it only (1,0) runs there
    np.testing.assert_allclose(
        machines.launch_state(timeline, np.array([1.0]), np.array([15]))[0, :3], [1, 0.1, 0.2]
    )


def test_timeline_survives_save_and_load(timeline, tmp_path):
    timeline.save(tmp_path / "timeline.npz")
    loaded = machines.MachineTimeline.load(tmp_path / "timeline.npz")
    machine, time = np.array([1, 2, 1, 5]), np.array([16, 30, 36, 1])
    np.testing.assert_array_equal(loaded.state(machine, time), timeline.state(machine, time))


def test_without_machine_events_capacities_are_unknown():
    events = events_frame([(10, 1, 0, SCHEDULE, 1, 0.1, 0.2), (20, 1, 0, FINISH, 1, 0.1, 0.2)])
    timeline = machines.build_timeline(events, None, horizon_us=30)
    state = timeline.state(np.array([1]), np.array([15]))
    assert state[0, 0] == 1 and np.isnan(state[0, 5:]).all()


# ---------------------------------------------------------------------------------------------
# on a small generated trace: the converted columns against a brute force over the raw rows
def read_raw(folder, columns):
    frames = [
        pd.read_csv(p, header=None, names=columns) for p in sorted(folder.glob("part-*.csv.gz"))
    ]
    return pd.concat(frames, ignore_index=True)


def task_event_sequences(task_events):
    """Each task's raw rows in time order (stable), as tuples: split once per table, so that
    every (machine, time) query below walks plain Python rows instead of regrouping."""
    return [
        list(rows.sort_values("timestamp", kind="stable").itertuples())
        for _, rows in task_events.groupby(["job_id", "task_index"], sort=False)
    ]


def brute_force_state(sequences, machine_events, machine, time_us):
    """One (machine, time) at a time, in plain Python, from the raw tables (`sequences`: the
    task_events rows by task, task_event_sequences)."""
    running = cpu = memory = evictions = failures = 0
    for rows in sequences:
        start = None
        for row in rows:
            if row.event_type == SCHEDULE:
                start = row
            elif row.event_type in (EVICT, FAIL, FINISH, 5, 6) and start is not None:
                if start.machine_id == machine and start.timestamp <= time_us < row.timestamp:
                    running, cpu, memory = (
                        running + 1,
                        cpu + start.cpu_request,
                        memory + start.memory_request,
                    )
                start = None
            if (
                row.event_type in (EVICT, FAIL)
                and row.machine_id == machine
                and row.timestamp <= time_us
            ):
                evictions += row.event_type == EVICT
                failures += row.event_type == FAIL
        if start is not None and start.machine_id == machine and start.timestamp <= time_us:
            running, cpu, memory = (
                running + 1,
                cpu + start.cpu_request,
                memory + start.memory_request,
            )
    capacity = machine_events[
        (machine_events.machine_id == machine) & (machine_events.timestamp <= time_us)
    ]
    cpus, mem = (
        (np.nan, np.nan) if capacity.empty else (capacity.cpus.iloc[-1], capacity.memory.iloc[-1])
    )
    return [running, cpu, memory, evictions, failures, cpus, mem]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    raw = tmp_path_factory.mktemp("machines") / "raw"
    generate_google(raw, {"n_jobs": 5, "n_parts": 2, "n_machines": 40, "seed": 7})
    return raw


@pytest.mark.slow
@pytest.mark.parametrize("convert", [convert_google, convert_google_events])
def test_converted_machine_columns_match_a_brute_force(generated, tmp_path, convert):
    out = tmp_path / "converted"
    report = convert(generated, out, dataset="g", n_shards=2, min_tasks=100)
    assert report["counts"]["machine_event_rows"] > 0
    task_events = read_raw(generated / "task_events", schema.GOOGLE_TASK_EVENTS)
    machine_events = read_raw(generated / "machine_events", schema.GOOGLE_MACHINE_EVENTS)
    sequences = task_event_sequences(task_events)
    manifest = pd.read_parquet(out / "manifest.parquet")
    frame = pd.read_parquet(out / manifest.path[0])
    rng = np.random.default_rng(0)
    # windows of single-attempt tasks (their machine is the task's machine_id); 6 of them
    single = frame[(frame.evictions == 0) & (frame.failures == 0)]
    for row in single.iloc[rng.choice(len(single), 6, replace=False)].itertuples():
        expected = brute_force_state(
            sequences, machine_events, int(row.machine_id), round(row.window_end * 1e6)
        )
        np.testing.assert_allclose([getattr(row, c) for c in COLUMNS], expected, atol=1e-9)
    # launch state: the first SCHEDULE's machine, 1 µs before it
    tasks = frame.drop_duplicates("task")
    job_id = int(manifest.job_id[0])
    for row in tasks.iloc[rng.choice(len(tasks), 4, replace=False)].itertuples():
        mine = task_events[
            (task_events.job_id == job_id) & (task_events.task_index == int(row.task_id))
        ]
        first = mine[mine.event_type == SCHEDULE].sort_values("timestamp").iloc[0]
        expected = brute_force_state(
            sequences, machine_events, first.machine_id, first.timestamp - 1
        )
        np.testing.assert_allclose(
            [getattr(row, "launch_" + c) for c in COLUMNS], expected, atol=1e-9
        )


USAGE_COLUMNS = list(machines.MACHINE_USAGE_COLUMNS)
PERIOD = machines.USAGE_PERIOD_US


def brute_force_usage(task_usage, machine, time_us):
    """Machine usage of the last period complete at `time_us`, row by row from the raw
    task_usage (every job): time-weighted task count, sums and per-task means."""
    period = time_us // PERIOD - 1
    low, high = period * PERIOD, (period + 1) * PERIOD
    tasks, sums, present = 0.0, [0.0] * 4, [0.0] * 4
    for row in task_usage[task_usage.machine_id == machine].itertuples():
        weight = max(min(row.end_time, high) - max(row.start_time, low), 0) / PERIOD
        if weight == 0:
            continue
        tasks += weight
        for j, source in enumerate(machines.MACHINE_USAGE_SOURCES):
            value = getattr(row, source)
            if not np.isnan(value):
                sums[j] += value * weight
                present[j] += weight
    means = [s / p if p > 0 else np.nan for s, p in zip(sums, present)]
    return [tasks, *sums, *means]


def test_converted_machine_usage_matches_a_brute_force(generated, tmp_path):
    # two parts, two spill folders (one per part): a period at the part boundary adds up
    from stragglers.convert.common import write_manifest
    from stragglers.convert.gather import gather_shard
    from stragglers.convert.google import prepare_google, spill_google_usage

    task_usage = read_raw(generated / "task_usage", schema.GOOGLE_TASK_USAGE)
    prepared, out = tmp_path / "prepared", tmp_path / "out"
    reports = [
        prepare_google(
            sorted((generated / "task_events").glob("*.gz")),
            prepared,
            dataset="g",
            n_shards=1,
            machine_event_parts=[generated / schema.GOOGLE_MACHINE_EVENTS_PART],
        )
    ]
    spills = []
    for k, part in enumerate(sorted((generated / "task_usage").glob("*.gz"))):
        reports.append(spill_google_usage([part], prepared, tmp_path / f"spill-{k}", dataset="g"))
        spills.append(tmp_path / f"spill-{k}")
    manifest, report = gather_shard(
        spills,
        0,
        out / "jobs" / "shard-0",
        kind="google-2011",
        dataset="g",
        tasks_path=prepared / "tasks.parquet",
    )
    write_manifest(out, [manifest], [*reports, report], kind="google-2011", dataset="g")
    # (machine, period) cells with rows in both parts: their sums must add
    keys = [set(np.load(folder / machines.USAGE_KEYS_FILE).tolist()) for folder in spills]
    shared_periods = {key & ((1 << machines.TIME_BITS) - 1) for key in keys[0] & keys[1]}
    assert shared_periods
    frame = pd.read_parquet(out / manifest.path[0])
    assert set(USAGE_COLUMNS) <= set(frame.columns) and "machine_code" not in frame
    rng = np.random.default_rng(1)
    single = frame[(frame.evictions == 0) & (frame.failures == 0)]
    picked = single.iloc[rng.choice(len(single), 6, replace=False)]
    period = machines.usage_period(np.rint(single.window_end.to_numpy() * 1e6))
    straddling = single[np.isin(period, list(shared_periods))]
    assert len(straddling)
    for row in pd.concat([picked, straddling.head(4)]).itertuples():
        expected = brute_force_usage(task_usage, int(row.machine_id), round(row.window_end * 1e6))
        np.testing.assert_allclose(
            [getattr(row, c) for c in USAGE_COLUMNS], expected, rtol=1e-9, atol=1e-12
        )
    # launch: the first SCHEDULE's machine, the last period complete before it
    task_events = read_raw(generated / "task_events", schema.GOOGLE_TASK_EVENTS)
    tasks = frame.drop_duplicates("task")
    job_id = int(manifest.job_id[0])
    for row in tasks.iloc[rng.choice(len(tasks), 4, replace=False)].itertuples():
        mine = task_events[
            (task_events.job_id == job_id) & (task_events.task_index == int(row.task_id))
        ]
        first = mine[mine.event_type == SCHEDULE].sort_values("timestamp").iloc[0]
        expected = brute_force_usage(task_usage, first.machine_id, first.timestamp - 1)
        np.testing.assert_allclose(
            [getattr(row, "launch_" + c) for c in USAGE_COLUMNS], expected, rtol=1e-9, atol=1e-12
        )


def test_machine_usage_by_hand():
    """Machine 0: a row over a whole period (0.4 CPU), a half-period row crossing into the
    next period (0.2 CPU, memory missing); machine 1: nothing. Periods 0-2 covered."""
    P = PERIOD
    keys, sums = machines.usage_partials(
        np.array([0, 0]),
        np.array([0, P - P // 4]),
        np.array([P, P + P // 4]),
        np.array([[0.4, 0.1, 0.0, 0.0], [0.2, np.nan, 0.0, 0.0]]),
    )
    assert list(keys) == [machines.composite_key(0, 0), machines.composite_key(0, 1)]
    np.testing.assert_allclose(sums[0, :3], [1.25, 0.4 + 0.05, 0.1])  # tasks, cpu, memory
    np.testing.assert_allclose(sums[1, :3], [0.25, 0.05, 0.0])
    np.testing.assert_allclose(sums[0, 5:7], [1.25, 1.0])  # cpu and memory reported over 1.25, 1


def test_machine_usage_lookup_by_hand(tmp_path):
    P = PERIOD
    accumulator = machines.MachineUsageAccumulator()
    accumulator.cover(np.array([0]), np.array([3 * P]))
    accumulator.add(
        np.array([0, 0]),
        np.array([0, P - P // 4]),
        np.array([P, P + P // 4]),
        np.array([[0.4, 0.1, 0.0, 0.0], [0.2, np.nan, 0.0, 0.0]]),
    )
    accumulator.save(tmp_path)
    lookup = machines.MachineUsageLookup([tmp_path])
    machine = np.array([0, 0, 0, 1, 0, 0, 0])
    known = np.array([True, True, True, True, False, True, True])
    time = np.array([P, P + 7, 2 * P, 2 * P, P, P - 1, 5 * P])
    state = lookup.state(machine, known, time)
    # at P: period 0 complete (tasks 1.25, cpu sum 0.45, cpu mean 0.45 / 1.25, memory 0.1 / 1)
    np.testing.assert_allclose(state[0, [0, 1, 2, 5, 6]], [1.25, 0.45, 0.1, 0.36, 0.1])
    np.testing.assert_allclose(state[1], state[0])  # still period 0 until 2P
    np.testing.assert_allclose(state[2, [0, 1, 5]], [0.25, 0.05, 0.2])
    assert np.isnan(state[2, 6])  # nobody reported memory in period 1
    np.testing.assert_allclose(state[3, :5], 0.0)  # machine 1 was idle in a covered period
    assert np.isnan(state[3, 5:]).all()
    assert np.isnan(state[4]).all()  # unknown machine
    assert np.isnan(state[5]).all()  # before any complete period
    assert np.isnan(state[6]).all()  # period 4: no part read covers it


def test_a_spill_without_machine_usage_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="reconvert"):
        machines.MachineUsageLookup([tmp_path])


def copy_tables(source, raw, tables):
    """A raw folder with only `tables` of `source` (e.g. without machine_events)."""
    for table in tables:
        (raw / table).mkdir(parents=True)
        for part in (source / table).iterdir():
            (raw / table / part.name).write_bytes(part.read_bytes())
    return raw


def test_without_a_machine_events_table_capacities_are_nan_and_counted(generated, tmp_path):
    raw = copy_tables(generated, tmp_path / "raw", ("task_events", "task_usage"))
    report = convert_google(raw, tmp_path / "out", dataset="g", n_shards=1, min_tasks=100)
    assert report["counts"]["machine_events_table_missing"] == 1
    manifest = pd.read_parquet(tmp_path / "out" / "manifest.parquet")
    frame = pd.read_parquet(tmp_path / "out" / manifest.path[0])
    assert frame["machine_cpu_capacity"].isna().all()
    assert (frame["machine_running_tasks"] >= 1).all()  # the task itself runs there


def test_bad_machine_event_rows_are_skipped_and_counted(generated, tmp_path):
    raw = copy_tables(generated, tmp_path / "raw", ("task_events", "task_usage"))
    text = gzip.decompress((generated / schema.GOOGLE_MACHINE_EVENTS_PART).read_bytes()).decode()
    text += "not-a-time,5,0,p,0.5,0.5\n,6,0,p,0.5,0.5\n"
    (raw / "machine_events").mkdir()
    (raw / schema.GOOGLE_MACHINE_EVENTS_PART).write_bytes(gzip.compress(text.encode()))
    report = convert_google(raw, tmp_path / "out", dataset="g", n_shards=1, min_tasks=100)
    assert report["skipped_rows"]["count"] == 2
    assert report["counts"]["machine_event_rows"] == len(text.splitlines()) - 2


def test_a_usage_window_on_a_machine_without_events_is_nan_and_counted(trace, tmp_path):  # noqa: F811
    # the hand-made trace's usage rows name machine 7, on which no task event happened
    report = convert_google(trace, tmp_path / "out", dataset="t", n_shards=1, min_tasks=3)
    counts = report["counts"]
    assert counts["usage_windows_machine_unknown"] == counts["windows_kept"] > 0
    manifest = pd.read_parquet(tmp_path / "out" / "manifest.parquet")
    frame = pd.read_parquet(tmp_path / "out" / manifest.path[0])
    assert frame["machine_running_tasks"].isna().all()
    assert frame["launch_machine_running_tasks"].notna().all()  # the events know their machines


def test_raw_layout_lists_machine_events(tmp_path):
    generated = raw_layout("google-2011", {"source": "generate", "generator": {"n_parts": 3}}, None)
    assert generated.tables["machine_events"] == [schema.GOOGLE_MACHINE_EVENTS_PART]
    (tmp_path / "task_events").mkdir()
    (tmp_path / "task_events" / "part-00000-of-00001.csv.gz").write_bytes(b"")
    local = raw_layout("google-2011-events", {"source": "local"}, str(tmp_path))
    assert local.tables["machine_events"] == []


# ---------------------------------------------------------------------------------------------
# what the replay hands a method
class MachineRecorder(Method):
    name = "machine-recorder"
    family = "test"
    uses_machine_state = True
    seen: list = []

    def predict(self, checkpoint):
        type(self).seen.append((self.job, checkpoint))
        return np.zeros(len(checkpoint.running_tasks), dtype=bool)


class PlainRecorder(MachineRecorder):
    name = "plain-recorder"
    uses_machine_state = False
    seen: list = []


def test_replay_hands_the_latest_machine_state_and_the_launch_state(generated, tmp_path):
    out = tmp_path / "converted"
    convert_google(generated, out, dataset="g", n_shards=1, min_tasks=100)
    manifest = pd.read_parquet(out / "manifest.parquet")
    columns = machine_state_columns("google-2011")
    job = read_job(
        out / manifest.path[0], manifest.job_id[0], feature_columns("google-2011"), columns
    )
    settings = ReplaySettings(grid_origin=600, checkpoint_interval=300)
    MachineRecorder.seen = []
    replay_job(job, MachineRecorder(), settings, last_columns("google-2011"), seed=1)
    assert MachineRecorder.seen
    info, checkpoint = MachineRecorder.seen[len(MachineRecorder.seen) // 2]
    assert info.machine_state_names == tuple(columns)
    for position, task in enumerate(checkpoint.running_tasks):
        available = (job.window_task == task) & (job.available_from <= checkpoint.time)
        latest = np.flatnonzero(available)[-1]  # windows are sorted by available_from
        np.testing.assert_array_equal(
            checkpoint.running_machine_state[position], job.window_machine_state[latest]
        )
    np.testing.assert_array_equal(
        checkpoint.running_launch_state, job.launch_machine_state[checkpoint.running_tasks]
    )
    np.testing.assert_array_equal(
        checkpoint.finished_launch_state, job.launch_machine_state[checkpoint.finished_tasks]
    )
    PlainRecorder.seen = []
    replay_job(job, PlainRecorder(), settings, last_columns("google-2011"), seed=1)
    assert PlainRecorder.seen[0][1].running_machine_state is None
    assert PlainRecorder.seen[0][0].machine_state_names == ()


def test_reading_machine_state_a_file_lacks_is_a_clear_error(tmp_path):
    raw = tmp_path / "raw"
    generate_alibaba(raw, {"n_jobs": 2, "seed": 3})
    convert_alibaba(raw, tmp_path / "out", dataset="a", n_shards=1, min_tasks=10)
    manifest = pd.read_parquet(tmp_path / "out" / "manifest.parquet")
    with pytest.raises(ValueError, match="lacks the machine state columns"):
        read_job(
            tmp_path / "out" / manifest.path[0],
            manifest.job_id[0],
            feature_columns("alibaba-2018"),
            machine_state_columns("google-2011"),
        )
    job = read_job(
        tmp_path / "out" / manifest.path[0],
        manifest.job_id[0],
        feature_columns("alibaba-2018"),
        machine_state_columns("alibaba-2018"),
    )
    n = len(machine_state_columns("alibaba-2018"))
    assert job.window_machine_state.shape[1] == n and job.launch_machine_state.shape == (
        job.n_tasks,
        n,
    )
    assert machine_state_columns("alibaba-2017") == []


# ---------------------------------------------------------------------------------------------
# Alibaba 2018: the binned state
def test_binned_alibaba_state_by_hand():
    state = machines.BinnedMachineState(bin_seconds=60)
    # machine 1: instance 10-130 (ok), 70-100 (failed), 200- (still running); machine 2: 0-60
    state.add_instances(
        np.array([1, 1, 1, 2]),
        np.array([10.0, 70, 200, 0]),
        np.array([130.0, 100, np.nan, 60]),
        np.array([False, True, False, False]),
    )
    # usage: 7 counters per sample; this test varies cpu, memory and disk and keeps the rest
    counters = np.array([[10.0, 20, 1], [30, 40, 2], [50, 60, 3]])
    state.add_usage(np.array([1, 1, 1]), np.array([50.0, 65, 110]), wide_usage(counters))
    state.set_meta(np.array([1, 1]), np.array([0.0, 150]), np.array([[96.0, 100], [48, 50]]))
    state.finish()
    times = np.array([59.0, 60, 119, 120, 180, 250, 60])
    got = state.state(np.array([1, 1, 1, 1, 1, 1, 2.0]), times)
    expected = np.array(
        [
            # running at B, failed before B, usage before B (3), meta at t (2)
            [0, 0, np.nan, np.nan, np.nan, 96, 100],  # B = 0
            [1, 0, 10, 20, 1, 96, 100],  # B = 60: 10-130 runs; usage sample at 50
            [1, 0, 10, 20, 1, 96, 100],  # still B = 60
            [1, 1, 50, 60, 3, 96, 100],  # B = 120: 70-100 failed before; latest sample 110
            [0, 1, 50, 60, 3, 48, 50],  # B = 180: 10-130 ended; meta updated at 150
            [1, 1, 50, 60, 3, 48, 50],  # B = 240: the instance started at 200 runs on
            [
                1,
                0,
                np.nan,
                np.nan,
                np.nan,
                np.nan,
                np.nan,
            ],  # machine 2 at B = 60: ends at 60 (start < B <= end)
        ]
    )
    np.testing.assert_allclose(got[:, [0, 1, 2, 3, 8, 9, 10]], expected)
    np.testing.assert_allclose(got[1:6, 4:8], np.tile([5.0, 6, 7, 8], (5, 1)))  # mem_gps .. net_out
    assert np.isnan(state.state(np.array([np.nan, 7.0]), np.array([60.0, 60]))).all()


def wide_usage(cpu_mem_disk):
    """machine_usage counters in ALIBABA_USAGE_COLUMNS order: the given cpu, memory and disk;
    mem_gps, mkpi, net_in, net_out fixed at 5, 6, 7, 8."""
    rows = len(cpu_mem_disk)
    return np.column_stack(
        [cpu_mem_disk[:, :2], np.tile([5.0, 6, 7, 8], (rows, 1)), cpu_mem_disk[:, 2]]
    )


def test_binned_state_survives_save_and_load(tmp_path):
    state = machines.BinnedMachineState(bin_seconds=30)
    state.add_instances(np.array([3]), np.array([5.0]), np.array([95.0]), np.array([False]))
    state.finish()
    state.save(tmp_path / "state.npz")
    loaded = machines.BinnedMachineState.load(tmp_path / "state.npz")
    np.testing.assert_array_equal(
        loaded.state(np.array([3.0]), np.array([40.0])),
        state.state(np.array([3.0]), np.array([40.0])),
    )


def test_alibaba_converted_machine_columns_match_a_brute_force(tmp_path):
    raw = tmp_path / "raw"
    generate_alibaba(
        raw, {"n_jobs": 3, "seed": 11, "n_machines": 60, "machine_usage_interval_s": 120}
    )
    report = convert_alibaba(
        raw, tmp_path / "out", dataset="a", n_shards=1, min_tasks=100, bin_seconds=60
    )
    assert report["counts"]["machine_usage_rows_read"] > 0
    instances = pd.read_csv(
        raw / "batch_instance.csv", header=None, names=schema.ALIBABA_2018_BATCH_INSTANCE
    )
    usage = pd.read_csv(
        raw / "machine_usage.csv", header=None, names=schema.ALIBABA_2018_MACHINE_USAGE
    )
    manifest = pd.read_parquet(tmp_path / "out" / "manifest.parquet")
    frame = pd.read_parquet(tmp_path / "out" / manifest.path[0])
    for row in frame.sample(8, random_state=0).itertuples():
        boundary = np.floor(row.task_start / 60) * 60
        here = instances[(instances.machine_id == row.machine_id) & instances.start_time.notna()]
        end = here.end_time.fillna(np.inf)
        running = ((here.start_time < boundary) & (boundary <= end)).sum()
        failed = ((here.status == "Failed") & (end < boundary)).sum()
        samples = usage[(usage.machine_id == row.machine_id) & (usage.time_stamp < boundary)]
        latest = samples.sort_values("time_stamp").iloc[-1] if len(samples) else None
        expected = (
            [running, failed]
            + (
                [getattr(latest, c) for c in machines.ALIBABA_USAGE_COLUMNS]
                if latest is not None
                else [np.nan] * len(machines.ALIBABA_USAGE_COLUMNS)
            )
            + [96, 100]
        )
        got = [getattr(row, c) for c in machines.ALIBABA_MACHINE_STATE_COLUMNS]
        np.testing.assert_allclose(got, expected)
        np.testing.assert_allclose(
            [getattr(row, "launch_" + c) for c in machines.ALIBABA_MACHINE_STATE_COLUMNS], got
        )


def test_alibaba_without_machine_tables_counts_them_missing(tmp_path):
    raw = tmp_path / "raw"
    generate_alibaba(raw, {"n_jobs": 2, "seed": 3})
    (raw / "machine_usage.csv").unlink()
    (raw / "machine_meta.csv").unlink()
    report = convert_alibaba(raw, tmp_path / "out", dataset="a", n_shards=1, min_tasks=10)
    assert report["counts"]["machine_usage_table_missing"] == 1
    assert report["counts"]["machine_meta_table_missing"] == 1
    manifest = pd.read_parquet(tmp_path / "out" / "manifest.parquet")
    frame = pd.read_parquet(tmp_path / "out" / manifest.path[0])
    assert (
        frame["machine_cpu_util_percent"].isna().all()
        and frame["machine_running_instances"].notna().all()
    )


def test_every_machine_column_has_a_feature_category():
    from stragglers.formats.datasets import (
        FEATURE_CATEGORIES,
        MACHINE_STATE_BY_KIND,
        machine_feature_category,
    )

    for kind in MACHINE_STATE_BY_KIND:
        for column in machine_state_columns(kind):
            assert machine_feature_category("launch_" + column) in FEATURE_CATEGORIES
