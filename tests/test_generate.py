"""Tests of the synthetic trace generators and the calibration statistics."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stragglers.convert.one_process import convert_dataset
from stragglers.formats.raw import (
    ALIBABA_2018_BATCH_INSTANCE,
    GOOGLE_JOB_EVENTS,
    GOOGLE_TASK_EVENTS,
    GOOGLE_TASK_USAGE,
    GOOGLE_TRACE_START_US,
    GOOGLE_WINDOW_US,
    EventType,
)
from stragglers.replay.usage_realism import ACTIVE_CV, dataset_statistics
from stragglers.traces import calibrate
from stragglers.traces.generate import (
    AlibabaGeneratorConfig,
    GoogleGeneratorConfig,
    generate_alibaba,
    generate_google,
    writing,
)
from stragglers.traces.generate.__main__ import main as generate_main
from stragglers.traces.generate.google import (
    enumerate_windows,
    fluctuation_series,
    part_boundaries,
    split_windows,
    window_bounds,
)
from stragglers.traces.generate.latent import round_significant

REAL_TASK_EVENTS = (
    Path(__file__).resolve().parents[2]
    / "shared/data/google-2011/task_events/part-00000-of-00500.csv.gz"
)
TABLES = {
    "job_events": GOOGLE_JOB_EVENTS,
    "task_events": GOOGLE_TASK_EVENTS,
    "task_usage": GOOGLE_TASK_USAGE,
}
# small but complete: both Figure-1 regimes (2 heavy-tailed jobs), every filter-out kind
SMALL_GOOGLE = {
    "n_jobs": 10,
    "max_tasks": 160,
    "n_parts": 3,
    "heavy_tail_job_fraction": 0.2,
    "killed_task_fraction": 0.02,
    "evict_fraction": 0.05,
    "fail_fraction": 0.02,
    "seed": 3,
}
RESOURCE_COLUMNS = [
    c
    for c in GOOGLE_TASK_USAGE[5:20]
    if c not in ("cycles_per_instruction", "memory_accesses_per_instruction", "aggregation_type")
]


def part_files(trace: Path, table: str) -> list[Path]:
    return sorted((trace / table).glob("part-*.csv.gz"))


def read_table(trace: Path, table: str) -> pd.DataFrame:
    frames = [pd.read_csv(f, header=None, names=TABLES[table]) for f in part_files(trace, table)]
    return pd.concat(frames, ignore_index=True)


def all_bytes(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def usage_with_attempts(usage: pd.DataFrame, task_events: pd.DataFrame) -> pd.DataFrame:
    """Each window with its attempt's SCHEDULE time, end, machine and measured span [low,
    high) (whole seconds), sorted by task and time."""
    s = 1_000_000
    ev = task_events.sort_values(["job_id", "task_index", "timestamp"], kind="stable")
    running = ev[ev["event_type"] != EventType.SUBMIT].copy()
    running["attempt_end"] = running.groupby(["job_id", "task_index"])["timestamp"].shift(-1)
    attempts = running[running["event_type"] == EventType.SCHEDULE].rename(
        columns={"timestamp": "attempt_start", "machine_id": "attempt_machine"}
    )[["job_id", "task_index", "attempt_start", "attempt_end", "attempt_machine"]]
    merged = pd.merge_asof(
        usage.sort_values("start_time"),
        attempts.sort_values("attempt_start"),
        left_on="start_time",
        right_on="attempt_start",
        by=["job_id", "task_index"],
    )
    merged["low"] = -(-merged["attempt_start"] // s) * s
    merged["high"] = (merged["attempt_end"] // s) * s
    return merged.sort_values(["job_id", "task_index", "start_time"], kind="stable")


@pytest.fixture(scope="module")
def google(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("google")
    generate_google(out, SMALL_GOOGLE)
    return out


@pytest.fixture(scope="module")
def task_events(google) -> pd.DataFrame:
    return read_table(google, "task_events")


@pytest.fixture(scope="module")
def task_usage(google) -> pd.DataFrame:
    return read_table(google, "task_usage")


@pytest.fixture(scope="module")
def truth(google) -> pd.DataFrame:
    return pd.read_csv(google / "generator_truth.csv.gz")


# ---------------------------------------------------------------- Google raw format


def test_every_row_has_the_official_column_count(google):
    for table, columns in TABLES.items():
        files = part_files(google, table)
        assert [f.name for f in files] == [f"part-{p:05d}-of-00003.csv.gz" for p in range(3)]
        for f in files:
            with gzip.open(f, "rt") as lines:
                counts = {line.rstrip("\n").count(",") + 1 for line in lines}
            assert counts == {len(columns)}, (f, counts)


def test_task_events_codes_times_and_requests(task_events):
    assert set(task_events["event_type"]) <= {int(e) for e in EventType}
    assert task_events["timestamp"].dtype == np.int64
    assert task_events["timestamp"].min() >= GOOGLE_TRACE_START_US
    assert task_events["missing_info"].isna().all()
    # machine is empty exactly on SUBMIT rows
    submit = task_events["event_type"] == EventType.SUBMIT
    assert task_events.loc[submit, "machine_id"].isna().all()
    assert task_events.loc[~submit, "machine_id"].notna().all()
    for c in ("cpu_request", "memory_request", "disk_space_request"):
        assert task_events[c].between(0, 1).all()
    assert set(task_events["different_machines_restriction"]) <= {0, 1}
    assert task_events["user"].str.len().eq(44).all()


def test_job_events_are_submit_schedule_finish(google):
    jobs = read_table(google, "job_events")
    assert jobs["timestamp"].min() >= GOOGLE_TRACE_START_US
    for _, events in jobs.sort_values("timestamp", kind="stable").groupby("job_id"):
        assert events["event_type"].tolist() == [
            EventType.SUBMIT,
            EventType.SCHEDULE,
            EventType.FINISH,
        ]


def test_usage_windows_on_grid_in_range_and_within_their_attempt(task_usage, task_events):
    u = task_usage
    assert u["start_time"].dtype == np.int64 and u["end_time"].dtype == np.int64
    assert (u["start_time"] >= GOOGLE_TRACE_START_US).all()
    assert (u["end_time"] > u["start_time"]).all()
    slot_start = (u["start_time"] - GOOGLE_TRACE_START_US) // GOOGLE_WINDOW_US
    slot_end = (u["end_time"] - 1 - GOOGLE_TRACE_START_US) // GOOGLE_WINDOW_US
    assert (slot_start == slot_end).all()  # never crosses a grid line
    for c in RESOURCE_COLUMNS:
        values = u[c].dropna()
        assert values.between(0, 1).all(), c
    assert (
        (u[["cycles_per_instruction", "memory_accesses_per_instruction"]].dropna() > 0).all().all()
    )
    assert (u["maximum_cpu_rate"] >= u["cpu_rate"]).all()
    assert (u["maximum_memory_usage"] >= u["canonical_memory_usage"]).all()
    # each window lies inside one attempt: SCHEDULE .. the attempt's end, same machine
    merged = usage_with_attempts(u, task_events)
    assert merged["attempt_start"].notna().all()
    assert (merged["end_time"] <= merged["attempt_end"]).all()
    assert (merged["machine_id"] == merged["attempt_machine"]).all()
    # windows cut by an attempt start on whole seconds, as in the real trace
    off_grid = (u["start_time"] - GOOGLE_TRACE_START_US) % GOOGLE_WINDOW_US != 0
    assert off_grid.any() and (u.loc[off_grid, "start_time"] % 1_000_000 == 0).all()


def test_parts_split_by_time_and_a_job_straddles_a_boundary(google):
    summary = json.loads((google / "generator.json").read_text())["summary"]
    bounds = summary["part_boundaries_us"]
    assert bounds == sorted(bounds) and len(bounds) == 4
    jobs_per_part = []
    for p, f in enumerate(part_files(google, "task_events")):
        part = pd.read_csv(f, header=None, names=GOOGLE_TASK_EVENTS)
        assert part["timestamp"].between(bounds[p], bounds[p + 1] - 1).all()
        assert part["timestamp"].is_monotonic_increasing
        jobs_per_part.append(set(part["job_id"]))
    for p, f in enumerate(part_files(google, "task_usage")):
        part = pd.read_csv(f, header=None, names=GOOGLE_TASK_USAGE)
        assert part["start_time"].between(bounds[p], bounds[p + 1] - 1).all()
    assert jobs_per_part[0] & jobs_per_part[1]


def test_task_lifecycles(task_events):
    ev = task_events.sort_values(["job_id", "task_index", "timestamp"], kind="stable")
    n_finished = n_interrupted = 0
    for _, codes in ev.groupby(["job_id", "task_index"])["event_type"]:
        codes = codes.tolist()
        assert codes[0] == EventType.SUBMIT and codes[1] == EventType.SCHEDULE
        if EventType.FINISH in codes:
            n_finished += 1
            assert codes[-1] == EventType.FINISH and codes.count(EventType.FINISH) == 1
            assert codes.index(EventType.SCHEDULE) < codes.index(EventType.FINISH)
        else:
            assert codes[-1] == EventType.KILL
        for k, code in enumerate(codes):
            if code in (EventType.EVICT, EventType.FAIL):
                n_interrupted += 1
                # resubmitted, then scheduled again
                assert codes[k + 1 : k + 3] == [EventType.SUBMIT, EventType.SCHEDULE]
    assert n_finished > 1000 and n_interrupted > 0


def test_filter_out_jobs_exist(task_events):
    per_job = task_events.groupby("job_id").agg(
        priority=("priority", "first"), n_tasks=("task_index", "nunique")
    )
    production = per_job["priority"].between(9, 11)
    eligible = production & (per_job["n_tasks"] >= 100)
    assert eligible.sum() == SMALL_GOOGLE["n_jobs"]
    assert (~production & (per_job["n_tasks"] >= 100)).sum() == 2  # 0.2 * n_jobs
    assert (per_job["n_tasks"] < 100).sum() == 2
    finished = task_events[task_events["event_type"] == EventType.FINISH]
    killed = task_events[task_events["event_type"] == EventType.KILL]
    assert len(killed) > 0
    assert not set(zip(killed["job_id"], killed["task_index"])) & set(
        zip(finished["job_id"], finished["task_index"])
    )


def test_both_figure1_regimes_occur(task_events):
    jobs = calibrate.job_latency_shape(calibrate.task_latencies(task_events))
    assert len(jobs) >= SMALL_GOOGLE["n_jobs"]
    assert jobs["p90_above_half_max"].any() and not jobs["p90_above_half_max"].all()


def test_default_config_covers_both_figure1_regimes(tmp_path):
    generate_google(tmp_path, {"write_truth": False})
    jobs = calibrate.job_latency_shape(
        calibrate.task_latencies(calibrate.read_task_events(tmp_path))
    )
    assert 30 <= len(jobs) <= 36
    assert 0 < (~jobs["p90_above_half_max"]).sum() < len(jobs) / 2


def test_signatures_show_in_windows_and_vanish_without_signature(
    google, task_usage, truth, tmp_path
):
    def mean_z(usage, truth, mechanism, feature):
        u = usage.merge(truth[["job_id", "task_index", "mechanisms"]], on=["job_id", "task_index"])
        u["z"] = (
            np.log(u[feature]).groupby(u["job_id"]).transform(lambda s: (s - s.mean()) / s.std())
        )
        per_task = u.groupby(["job_id", "task_index", "mechanisms"])["z"].mean().reset_index()
        return (
            per_task.loc[per_task["mechanisms"] == mechanism, "z"].mean()
            - per_task.loc[per_task["mechanisms"] == "none", "z"].mean()
        )

    expected = {
        "slow_machine": "cycles_per_instruction",
        "memory_pressure": "canonical_memory_usage",
        "disk_contention": "disk_io_time",
        "data_skew": "local_disk_space_usage",
    }
    for mechanism, feature in expected.items():
        assert mean_z(task_usage, truth, mechanism, feature) > 0.5, mechanism
    assert abs(mean_z(task_usage, truth, "silent", "cycles_per_instruction")) < 0.5

    generate_google(tmp_path, {**SMALL_GOOGLE, "signature_strength": 0.0})
    flat_usage = read_table(tmp_path, "task_usage")
    flat_truth = pd.read_csv(tmp_path / "generator_truth.csv.gz")
    for mechanism, feature in expected.items():
        assert abs(mean_z(flat_usage, flat_truth, mechanism, feature)) < 0.4, mechanism


def test_stragglers_are_slower_than_nominal_because_of_mechanisms(truth):
    done = truth[(truth["killed"] == 0) & (truth["job_kind"] == "eligible")]
    ratio = done["latency_s"] / done["nominal_s"]
    slowed = done["mechanisms"].isin(
        ["slow_machine", "memory_pressure", "disk_contention", "silent"]
    )
    assert ratio[slowed].median() > ratio[done["mechanisms"] == "none"].median()
    assert (ratio[done["mechanisms"] == "decoy"].median() - 1) < 0.01


# ---------------------------------------------------------------- determinism, parts, atomicity


def test_same_seed_same_bytes_other_seed_other_bytes(google, tmp_path):
    again = tmp_path / "again"
    generate_google(again, SMALL_GOOGLE)
    assert all_bytes(again) == all_bytes(google)
    other = tmp_path / "other"
    generate_google(other, {**SMALL_GOOGLE, "seed": 4})
    for table in TABLES:
        assert part_files(other, table)[0].read_bytes() != part_files(google, table)[0].read_bytes()


def test_gzip_header_has_no_time_or_name(google):
    head = part_files(google, "task_usage")[0].read_bytes()[:10]
    assert head[:3] == b"\x1f\x8b\x08" and head[3] == 0  # no FNAME flag
    assert head[4:8] == b"\x00\x00\x00\x00"  # mtime 0


def test_part_count_changes_files_not_rows(google, tmp_path):
    generate_google(tmp_path, {**SMALL_GOOGLE, "n_parts": 2, "write_truth": False})
    for table in TABLES:
        assert len(part_files(tmp_path, table)) == 2
        assert read_table(tmp_path, table).equals(read_table(google, table))


def test_rerun_with_fewer_parts_removes_stale_parts(tmp_path):
    generate_google(tmp_path, {"n_jobs": 2, "n_parts": 4, "write_truth": False})
    generate_google(tmp_path, {"n_jobs": 2, "n_parts": 2, "write_truth": False})
    assert [f.name for f in part_files(tmp_path, "task_usage")] == [
        "part-00000-of-00002.csv.gz",
        "part-00001-of-00002.csv.gz",
    ]


def test_atomic_file_leaves_nothing_complete_looking_on_error(tmp_path):
    target = tmp_path / "part-00000-of-00002.csv.gz"
    with pytest.raises(RuntimeError):
        with writing.AtomicFile(target, gzip_level=1) as f:
            f.write(b"1,2,3\n")
            raise RuntimeError("crash while writing")
    assert list(tmp_path.iterdir()) == []
    with writing.AtomicFile(target, gzip_level=1) as f:
        f.write(b"1,2,3\n")
        assert not target.exists()  # only the .partial exists until commit
    assert gzip.decompress(target.read_bytes()) == b"1,2,3\n"


# ---------------------------------------------------------------- small pure functions


def test_round_significant():
    values = np.array([0.0015623, 2.86149e-06, 0.0, 2.4449, 12345.6, np.nan])
    out = round_significant(values)
    assert [repr(float(v)) for v in out[:5]] == ["0.001562", "2.861e-06", "0.0", "2.445", "12350.0"]
    assert np.isnan(out[5])


def test_window_bounds_and_enumerate_windows():
    s = 1_000_000
    low, high = window_bounds(np.array([650 * s + 1]), np.array([1250 * s + 999_999]))
    assert low.tolist() == [651 * s] and high.tolist() == [1250 * s]
    span, start, end = enumerate_windows(low, high, 0, 10)
    assert span.tolist() == [0, 0, 0]
    assert start.tolist() == [651 * s, 900 * s, 1200 * s]
    assert end.tolist() == [900 * s, 1200 * s, 1250 * s]
    # only slots in [1, 2): the middle window; empty spans give none
    span, start, end = enumerate_windows(
        np.array([651 * s, 5 * s]), np.array([1250 * s, 5 * s]), 1, 2
    )
    assert span.tolist() == [0] and start.tolist() == [900 * s] and end.tolist() == [1200 * s]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4_000), st.integers(0, 2_000)), min_size=1, max_size=20))
def test_enumerate_windows_tiles_each_span_on_the_grid(spans):
    s = 1_000_000
    low = np.array([GOOGLE_TRACE_START_US + a * s for a, _ in spans], dtype=np.int64)
    high = low + np.array([b * s for _, b in spans], dtype=np.int64)
    span, start, end = enumerate_windows(low, high, 0, 100)
    covered = np.zeros(len(spans), dtype=np.int64)
    np.add.at(covered, span, end - start)
    assert covered.tolist() == (high - low).tolist()  # windows tile each span exactly
    assert (
        (start - GOOGLE_TRACE_START_US) // GOOGLE_WINDOW_US
        == (end - 1 - GOOGLE_TRACE_START_US) // GOOGLE_WINDOW_US
    ).all()
    assert (start >= low[span]).all() and (end <= high[span]).all()


def test_part_boundaries():
    times = np.array([600, 700, 800, 900, 1000, 1100], dtype=np.int64) * 1_000_000
    bounds = part_boundaries(times, 3)
    assert bounds.tolist() == [600_000_000, 800_000_000, 1_000_000_000, 1_100_000_001]


# ---------------------------------------------------------------- usage-record mechanisms

# the four usage-record knobs at values measured on the real jobs (docs/generator.md,
# "Usage records")
USAGE_KNOBS = {
    "idle_start_median": 0.47,
    "usage_fluctuation_sd": 1.0,
    "usage_cuts_per_attempt": 1.5,
    "final_usage_window_s": 1.0,
}
OFF = dict.fromkeys(USAGE_KNOBS, 0.0)
# sha-256 of the uncompressed tables of this config, written before the knobs existed
BEFORE_KNOBS = {"n_jobs": 3, "max_tasks": 120, "seed": 11, "evict_fraction": 0.05}
BEFORE_KNOBS_SHA256 = "756ceb80e1c713bf0cb666248c7372778fddc65132f86d860e16d929b37a1fcc"


def tables_sha256(trace: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(trace.rglob("*.csv.gz")):
        digest.update(gzip.decompress(path.read_bytes()))
    return digest.hexdigest()


def test_usage_knobs_off_leave_the_tables_as_before_the_knobs(tmp_path):
    generate_google(tmp_path, {**BEFORE_KNOBS, **OFF, "write_truth": False})
    assert tables_sha256(tmp_path) == BEFORE_KNOBS_SHA256


@pytest.fixture(scope="module")
def with_knobs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("google-usage-knobs")
    generate_google(out, {**SMALL_GOOGLE, **USAGE_KNOBS})
    return out


def test_usage_knobs_change_only_task_usage(google, with_knobs):
    before, after = all_bytes(google), all_bytes(with_knobs)
    usage = {name for name in before if name.startswith("task_usage/")}
    assert usage and all(before[name] != after[name] for name in usage)
    assert {k: v for k, v in before.items() if k not in usage and k != "generator.json"} == {
        k: v for k, v in after.items() if k not in usage and k != "generator.json"
    }


def test_idle_start_zeroes_the_first_share_of_each_attempt(with_knobs, task_events):
    u = usage_with_attempts(read_table(with_knobs, "task_usage"), task_events)
    measures = u[GOOGLE_TASK_USAGE[5:17] + ["sampled_cpu_usage"]]
    u["idle"] = (measures == 0).all(axis=1)
    first = u.groupby(["job_id", "task_index", "attempt_start"]).head(1)
    assert first["idle"].mean() > 0.95  # real: 0.95 of the tasks
    # idle windows come first: no idle window after a non-idle one of the same attempt
    busy_before = u.groupby(["job_id", "task_index", "attempt_start"])["idle"].transform(
        lambda idle: (~idle).cumsum().shift(fill_value=0) > 0
    )
    assert not (u["idle"] & busy_before).any()
    duration = u["end_time"] - u["start_time"]
    share = (duration * u["idle"]).groupby([u["job_id"], u["task_index"], u["attempt_start"]]).sum()
    share /= duration.groupby([u["job_id"], u["task_index"], u["attempt_start"]]).sum()
    assert share.median() == pytest.approx(0.47, abs=0.03)  # real: 0.47 of the life


def test_window_cuts_and_the_final_record(google, with_knobs, task_events):
    plain = read_table(google, "task_usage")
    u = usage_with_attempts(read_table(with_knobs, "task_usage"), task_events)
    # still on whole seconds, never across a grid line, inside the attempt's span, tiling it
    assert (u["start_time"] % 1_000_000 == 0).all() and (u["end_time"] % 1_000_000 == 0).all()
    slot_start = (u["start_time"] - GOOGLE_TRACE_START_US) // GOOGLE_WINDOW_US
    slot_end = (u["end_time"] - 1 - GOOGLE_TRACE_START_US) // GOOGLE_WINDOW_US
    assert (slot_start == slot_end).all()
    assert ((u["start_time"] >= u["low"]) & (u["end_time"] <= u["high"])).all()
    covered = (u["end_time"] - u["start_time"]).groupby([u["job_id"], u["task_index"]]).sum()
    plain_covered = (
        (plain["end_time"] - plain["start_time"]).groupby([plain["job_id"], plain["task_index"]])
    ).sum()
    assert covered.equals(plain_covered)
    # cut inside the grid slots: windows shorter than 300 s that touch no attempt bound
    inner = (u["start_time"] > u["low"]) & (u["end_time"] < u["high"])
    assert ((u["end_time"] - u["start_time"] < GOOGLE_WINDOW_US) & inner).mean() > 0.1
    # about 1.5 cuts + the idle end + the final record more per attempt than the grid gives
    extra = (len(u) - len(plain)) / task_events["event_type"].eq(EventType.SCHEDULE).sum()
    assert 2.5 < extra < 4.0
    last = u.groupby(["job_id", "task_index", "attempt_start"]).tail(1)
    assert ((last["end_time"] - last["start_time"]) == 1_000_000).mean() > 0.99


def test_fluctuation_varies_the_resources_and_leaves_cpi_mai_and_windows(google, tmp_path):
    generate_google(tmp_path, {**SMALL_GOOGLE, "usage_fluctuation_sd": 1.0})
    plain, varied = read_table(google, "task_usage"), read_table(tmp_path, "task_usage")
    unchanged = GOOGLE_TASK_USAGE[:5] + [
        "cycles_per_instruction",
        "memory_accesses_per_instruction",
        "sample_portion",
        "aggregation_type",
    ]
    assert varied[unchanged].equals(plain[unchanged])

    def cv(usage: pd.DataFrame, column: str) -> float:
        """Median over tasks of the duration-weighted CV of a column over the task's windows."""
        u = usage.assign(w=usage["end_time"] - usage["start_time"])
        u["wx"] = u["w"] * u[column]
        mean = u.groupby(["job_id", "task_index"])["wx"].transform("sum") / u.groupby(
            ["job_id", "task_index"]
        )["w"].transform("sum")
        u["wd"] = u["w"] * (u[column] - mean) ** 2
        sums = u.groupby(["job_id", "task_index"])[["w", "wx", "wd"]].sum()
        return float((np.sqrt(sums["wd"] / sums["w"]) / (sums["wx"] / sums["w"])).median())

    # real: duration-weighted CV 0.60-0.94 over the non-idle windows (canonical memory 0.69)
    for column in ("cpu_rate", "canonical_memory_usage", "disk_io_time"):
        assert 0.5 < cv(varied, column) < 0.9, column
    assert cv(plain, "canonical_memory_usage") < 0.1
    # the memory family shares one series: canonical memory and page cache move together
    cache = np.log(varied["unmapped_page_cache"] / plain["unmapped_page_cache"])
    memory = np.log(varied["canonical_memory_usage"] / plain["canonical_memory_usage"])
    cpu = np.log(varied["cpu_rate"] / plain["cpu_rate"])
    assert np.corrcoef(cache, memory)[0, 1] > 0.95 and abs(np.corrcoef(cpu, memory)[0, 1]) < 0.1


def test_google_conversion_reads_the_knobs_output(with_knobs, tmp_path):
    report = convert_dataset(
        kind="google-2011",
        raw_dir=str(with_knobs),
        out_dir=str(tmp_path),
        dataset="knobs",
        n_shards=1,
        min_tasks=100,
        priorities=[9, 10, 11],
    )
    counts = report["counts"]
    assert counts["usage_windows_outside_task_life"] == 0
    assert counts["usage_windows_zero_length"] == 0
    tasks, lengths, _ = dataset_statistics(tmp_path)
    assert tasks["first_idle"].mean() > 0.95
    assert tasks["idle_share"].median() == pytest.approx(0.47, abs=0.05)
    assert 0.5 < tasks[f"{ACTIVE_CV}|canonical_memory_usage"].median() < 0.9
    assert np.quantile(lengths, 0.1) < 60


def test_split_windows_and_fluctuation_series_by_hand():
    attempt, start, end = np.array([0, 0, 1]), np.array([0, 300, 50]), np.array([300, 400, 100])
    a, s0, s1 = split_windows(attempt, start, end, np.array([0, 0, 1]), np.array([100, 300, 70]))
    assert a.tolist() == [0, 0, 0, 1, 1]
    assert s0.tolist() == [0, 100, 300, 50, 70] and s1.tolist() == [100, 300, 400, 70, 100]
    # the series runs on across calls through `state`; stationary, unit variance
    state = np.full((2, 4), np.nan)
    rng = np.random.default_rng(0)
    series = fluctuation_series(np.array([1, 0, 1]), np.array([10, 0, 0]), state, rng)
    assert np.isfinite(series).all() and np.array_equal(state[1], series[0])
    many = np.concatenate(
        [fluctuation_series(np.zeros(50, np.int64), np.arange(50), state, rng) for _ in range(40)]
    )
    assert abs(many.std() - 1) < 0.1
    lag = np.corrcoef(many[1:, 0], many[:-1, 0])[0, 1]
    assert 0.4 < lag < 0.6


def test_usage_knobs_are_range_checked():
    with pytest.raises(ValueError, match="'idle_start_median'"):
        GoogleGeneratorConfig(idle_start_median=1.0)
    for knob in ("usage_fluctuation_sd", "usage_cuts_per_attempt", "final_usage_window_s"):
        with pytest.raises(ValueError, match=knob):
            GoogleGeneratorConfig(**{knob: -0.1})


# ---------------------------------------------------------------- configs and CLI


def test_config_rejects_unknown_and_bad_settings():
    with pytest.raises(ValueError, match="unknown setting 'n_job'"):
        GoogleGeneratorConfig.from_dict({"n_job": 3})
    with pytest.raises(ValueError, match="'n_parts'"):
        AlibabaGeneratorConfig.from_dict({"n_parts": 3})
    with pytest.raises(ValueError, match="'n_parts'"):
        GoogleGeneratorConfig(n_parts=1)
    with pytest.raises(ValueError, match="'evict_fraction'"):
        GoogleGeneratorConfig(evict_fraction=1.5)
    with pytest.raises(ValueError, match="'n_jobs' must be int"):
        GoogleGeneratorConfig(n_jobs=2.5)
    with pytest.raises(ValueError, match="'min_tasks'"):
        GoogleGeneratorConfig(min_tasks=50)
    config = AlibabaGeneratorConfig.from_dict({"n_jobs": 4, "gzip": True})
    assert AlibabaGeneratorConfig.from_dict(config.to_dict()) == config


def test_cli_writes_a_trace_and_reports_bad_knobs(tmp_path, capsys):
    assert (
        generate_main(["google", "--out", str(tmp_path), "--n-jobs", "2", "--set", "max_tasks=120"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["eligible_jobs"] == 2
    assert generate_main(["alibaba", "--out", str(tmp_path), "--set", "colour=1"]) == 2
    assert "unknown setting 'colour'" in capsys.readouterr().err


# ---------------------------------------------------------------- Alibaba


@pytest.fixture(scope="module")
def alibaba(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("alibaba")
    generate_alibaba(out, {"n_jobs": 8, "max_tasks": 150, "seed": 5})
    return out


def test_alibaba_rows_parse_with_the_official_columns(alibaba):
    path = alibaba / "batch_instance.csv"
    counts = {line.count(",") + 1 for line in path.read_text().splitlines()}
    assert counts == {len(ALIBABA_2018_BATCH_INSTANCE)}
    rows = pd.read_csv(path, header=None, names=ALIBABA_2018_BATCH_INSTANCE)
    assert set(rows["status"]) == {"Terminated", "Failed", "Running", "Waiting"}
    done = rows[rows["status"].isin(["Terminated", "Failed"])]
    assert (done["end_time"] > done["start_time"]).all() and (done["start_time"] >= 0).all()
    assert (done["start_time"] == done["start_time"].round()).all()
    assert done["mem_avg"].between(0, 100).all() and done["mem_max"].between(0, 100).all()
    assert (done["cpu_max"] >= done["cpu_avg"]).all() and (done["cpu_avg"] > 0).all()
    assert (done["seq_no"] <= done["total_seq_no"]).all()
    assert rows["instance_name"].str.match(r"^ins_\d+$").all()
    assert rows["machine_id"].dropna().str.match(r"^m_\d+$").all()
    # retried instances: Failed runs first, then the Terminated run, same instance name
    retried = done[done["total_seq_no"] > 1].sort_values(["instance_name", "seq_no"])
    assert len(retried) > 0
    for _, runs in retried.groupby("instance_name"):
        assert runs["seq_no"].tolist() == list(range(1, len(runs) + 1))
        assert (runs["status"].iloc[:-1] == "Failed").all()


def test_alibaba_eligible_and_filtered_tasks(alibaba):
    rows = pd.read_csv(
        alibaba / "batch_instance.csv", header=None, names=ALIBABA_2018_BATCH_INSTANCE
    )
    terminated = rows[rows["status"] == "Terminated"].groupby(["job_name", "task_name"]).size()
    assert (terminated >= 100).sum() == 8
    assert ((terminated < 100) & (terminated > 0)).sum() == 2  # small tasks (0.2 * 8)
    jobs = calibrate.job_latency_shape(
        rows[rows["status"] == "Terminated"].assign(
            job_id=lambda r: r["job_name"] + "/" + r["task_name"],
            latency=lambda r: (r["end_time"] - r["start_time"]).astype(float),
            interrupted=lambda r: r["total_seq_no"] > 1,
        )
    )
    assert len(jobs) == 8


def test_alibaba_determinism_and_gzip_variant(alibaba, tmp_path):
    generate_alibaba(tmp_path, {"n_jobs": 8, "max_tasks": 150, "seed": 5, "write_truth": False})
    assert (tmp_path / "batch_instance.csv").read_bytes() == (
        alibaba / "batch_instance.csv"
    ).read_bytes()
    generate_alibaba(
        tmp_path, {"n_jobs": 8, "max_tasks": 150, "seed": 5, "gzip": True, "write_truth": False}
    )
    assert not (tmp_path / "batch_instance.csv").exists()
    assert (
        gzip.decompress((tmp_path / "batch_instance.csv.gz").read_bytes())
        == (alibaba / "batch_instance.csv").read_bytes()
    )
    generate_alibaba(tmp_path, {"n_jobs": 8, "max_tasks": 150, "seed": 6, "write_truth": False})
    assert (tmp_path / "batch_instance.csv").read_bytes() != (
        alibaba / "batch_instance.csv"
    ).read_bytes()


# ---------------------------------------------------------------- calibration statistics


def hand_made_events() -> pd.DataFrame:
    S, V, E, F, K = (
        int(EventType.SUBMIT),
        int(EventType.SCHEDULE),
        int(EventType.EVICT),
        int(EventType.FINISH),
        int(EventType.KILL),
    )
    s = 1_000_000
    rows = [
        # job 1: latencies 10, 20, 30 (evicted once, rescheduled), 100 s
        (0, 1, 0, S),
        (1 * s, 1, 0, V),
        (11 * s, 1, 0, F),
        (0, 1, 1, S),
        (2 * s, 1, 1, V),
        (22 * s, 1, 1, F),
        (0, 1, 2, S),
        (3 * s, 1, 2, V),
        (8 * s, 1, 2, E),
        (8 * s + 7, 1, 2, S),
        (9 * s, 1, 2, V),
        (33 * s, 1, 2, F),
        (0, 1, 3, S),
        (4 * s, 1, 3, V),
        (104 * s, 1, 3, F),
        (0, 1, 4, S),
        (4 * s, 1, 4, V),
        (50 * s, 1, 4, K),  # killed: no latency
        (60 * s, 1, 5, F),  # FINISH without a SCHEDULE (scheduled before the data): dropped
        # job 2: latencies 10, 10, 10, 20 s
        (0, 2, 0, V),
        (10 * s, 2, 0, F),
        (0, 2, 1, V),
        (10 * s, 2, 1, F),
        (0, 2, 2, V),
        (10 * s, 2, 2, F),
        (0, 2, 3, V),
        (20 * s, 2, 3, F),
        # job 3: only 2 finished tasks, below min_tasks
        (0, 3, 0, V),
        (5 * s, 3, 0, F),
        (0, 3, 1, V),
        (6 * s, 3, 1, F),
    ]
    return pd.DataFrame(rows, columns=["timestamp", "job_id", "task_index", "event_type"])


def test_task_latencies_by_hand():
    tasks = calibrate.task_latencies(hand_made_events())
    job1 = tasks[tasks["job_id"] == 1].set_index("task_index")
    assert job1["latency"].to_dict() == {0: 10.0, 1: 20.0, 2: 30.0, 3: 100.0}
    assert job1["interrupted"].to_dict() == {0: False, 1: False, 2: True, 3: False}
    assert len(tasks) == 4 + 4 + 2


def test_job_shape_and_summary_by_hand():
    jobs = calibrate.job_latency_shape(calibrate.task_latencies(hand_made_events()), min_tasks=4)
    assert jobs["job_id"].tolist() == [1, 2]
    one, two = jobs.iloc[0], jobs.iloc[1]
    # job 1: median 25, p90 = 30 + 0.7 * 70 = 79, max 100
    assert one["median_s"] == pytest.approx(25.0) and one["p90_s"] == pytest.approx(79.0)
    assert one["p90_over_median"] == pytest.approx(79 / 25)
    assert one["max_over_p90"] == pytest.approx(100 / 79)
    assert bool(one["p90_above_half_max"]) and one["interrupted_fraction"] == 0.25
    # job 2: median 10, p90 = 10 + 0.7 * 10 = 17, max 20
    assert two["p90_s"] == pytest.approx(17.0) and two["max_over_p90"] == pytest.approx(20 / 17)
    summary = calibrate.shape_summary(jobs, quantiles=(0.5,))
    assert summary["jobs"] == 2 and summary["tasks"] == 8
    assert summary["p90_over_median q50"] == pytest.approx((79 / 25 + 1.7) / 2)
    assert summary["fraction of jobs with p90 > max/2"] == 1.0
    assert summary["fraction of tasks with EVICT/FAIL (pooled)"] == pytest.approx(1 / 8)
    assert summary["fraction of tasks with EVICT/FAIL (mean over jobs)"] == pytest.approx(0.125)
    assert summary["fraction of jobs with any EVICT/FAIL"] == 0.5


def test_calibration_cli_on_generated_trace(google, capsys):
    assert calibrate.main(["--generated", str(google)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| statistic | generated |") and "p90 > max/2" in out
    assert calibrate.main(["--generated", str(google / "nowhere")]) == 2


@pytest.mark.skipif(
    not REAL_TASK_EVENTS.exists(), reason=f"real trace file absent: {REAL_TASK_EVENTS}"
)
def test_calibration_on_the_real_part():
    summary = calibrate.summarize_trace(REAL_TASK_EVENTS)
    # the part is fixed (SHA-256 in shared/data/google-2011/SHA256SUM): exact counts
    assert summary["jobs"] == 51 and summary["tasks"] == 40513
    assert summary["fraction of jobs with p90 > max/2"] == pytest.approx(45 / 51)
    assert 1.1 < summary["p90_over_median q50"] < 1.25
    assert 1.1 < summary["max_over_p90 q50"] < 1.2
    assert 0.005 < summary["fraction of tasks with EVICT/FAIL (pooled)"] < 0.01
