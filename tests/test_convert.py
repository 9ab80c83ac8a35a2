"""Raw parts -> per-job Parquet: a tiny hand-made trace with a job across two parts, and bad input."""

import gzip
import json

import numpy as np
import pandas as pd
import pytest

from stragglers.convert.one_process import convert_alibaba, convert_google
from stragglers.formats.datasets import feature_columns
from stragglers.formats.jobs import read_job
from stragglers.traces.rawcsv import RawTraceError

S = 1_000_000  # µs per second
SUBMIT, SCHEDULE, EVICT, FAIL, FINISH, KILL = 0, 1, 2, 3, 4, 5


def event(t, job, task, kind, machine="", priority=9):
    # timestamp, missing, job, task, machine, event, user, class, priority, cpu, mem, disk, diff
    return f"{int(t * S)},,{job},{task},{machine},{kind},user,2,{priority},0.05,0.01,0.001,0"


def usage(t0, t1, job, task, machine=7, cpu=0.1):
    values = [cpu, 0.02, 0.02, 0.001, 0.002, 0.03, 0.001, 0.0001, 2 * cpu, 0.002, 1.5, 0.01]
    return ",".join(
        [str(int(t0 * S)), str(int(t1 * S)), str(job), str(task), str(machine)]
        + [str(v) for v in values]
        + ["0", "1", str(cpu)]
    )


def write_part(folder, name, lines, corrupt=False):
    folder.mkdir(parents=True, exist_ok=True)
    data = gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0)
    if corrupt:
        data = data[: len(data) // 2]
    (folder / name).write_bytes(data)


@pytest.fixture
def trace(tmp_path):
    """Job 1: 4 tasks, task 0 evicted once; the job runs across the part boundary at 1200 s.
    Job 2: priority 2 (not production). Job 3: one task killed, three finish.
    Job 4: a task still running when the parts end (incomplete). Job 5: 2 tasks (too few)."""
    raw = tmp_path / "raw"
    part0, part1 = [], []
    for task in range(4):
        part0.append(event(600 + task, 1, task, SUBMIT))
        part0.append(event(610 + task, 1, task, SCHEDULE, machine=100 + task))
    part0 += [event(700, 1, 0, EVICT, machine=100), event(720, 1, 0, SCHEDULE, machine=200)]
    part0 += [event(1000, 1, 1, FINISH, machine=101)]
    part1 += [
        event(1300, 1, 0, FINISH, 200),
        event(1400, 1, 2, FINISH, 102),
        event(2000, 1, 3, FINISH, 103),
    ]
    for task in range(4):
        part0 += [
            event(600, 2, task, SCHEDULE, 5, priority=2),
            event(900, 2, task, FINISH, 5, priority=2),
        ]
    for task in range(4):
        part0.append(event(650, 3, task, SCHEDULE, 9))
        part1.append(event(1500, 3, task, KILL if task == 3 else FINISH, 9))
    for task in range(3):
        part0.append(event(650, 4, task, SCHEDULE, 9))
    part1 += [event(1500, 4, 0, FINISH, 9), event(1500, 4, 1, FINISH, 9)]
    for task in range(2):
        part0 += [event(650, 5, task, SCHEDULE, 9), event(1100, 5, task, FINISH, 9)]
    write_part(raw / "task_events", "part-00000-of-00002.csv.gz", part0)
    write_part(raw / "task_events", "part-00001-of-00002.csv.gz", part1)

    u0, u1 = [], []
    u0 += [usage(610, 690, 1, 0), usage(720, 900, 1, 0), usage(900, 1200, 1, 0)]
    u1 += [usage(1200, 1300, 1, 0)]
    u0 += [usage(611, 900, 1, 1), usage(900, 1000, 1, 1)]
    u0 += [usage(612, 900, 1, 2), usage(900, 1200, 1, 2)]
    u1 += [usage(1200, 1400, 1, 2)]
    u0 += [usage(613, 900, 1, 3, cpu=0.5), usage(900, 1200, 1, 3, cpu=0.5)]
    u1 += [
        usage(1200, 1500, 1, 3, cpu=0.5),
        usage(1500, 1800, 1, 3, cpu=0.5),
        usage(1800, 2000, 1, 3, cpu=0.5),
    ]
    u1 += [usage(1300, 1300, 1, 2)]  # zero-length window
    u1 += [usage(2000, 2100, 1, 3)]  # after the task finished
    for task in range(4):
        u0.append(usage(650, 900, 3, task))
        u1.append(usage(900, 1500, 3, task))
    for task in range(2):
        u0.append(usage(650, 900, 4, task))
        u0.append(usage(650, 900, 5, task))
    write_part(raw / "task_usage", "part-00000-of-00002.csv.gz", u0)
    write_part(raw / "task_usage", "part-00001-of-00002.csv.gz", u1)
    return raw


def test_converts_a_job_spread_over_two_parts(trace, tmp_path):
    summary = convert_google(trace, tmp_path / "out", dataset="t", n_shards=2, min_tasks=3)
    counts = summary["counts"]
    manifest = pd.read_parquet(tmp_path / "out" / "manifest.parquet")
    assert sorted(manifest["job_id"]) == ["1", "3"]
    assert counts["jobs_dropped_incomplete_in_selected_parts"] == 1  # job 4
    assert counts["jobs_dropped_below_min_tasks"] == 1  # job 5
    assert counts["tasks_killed"] == 1  # job 3, task 3
    assert counts["usage_windows_zero_length"] == 1
    assert counts["usage_windows_outside_task_life"] == 1
    assert counts["jobs_with_non_production_rows"] == 1  # job 2
    row = manifest.set_index("job_id").loc["1"]
    assert row["n_tasks"] == 4 and row["n_windows"] == 14  # 4 + 2 + 3 + 5
    job = read_job(tmp_path / "out" / row["path"], "1", feature_columns("google-2011"))
    by_id = {tid: i for i, tid in enumerate(job.task_id)}
    t0 = by_id["0"]
    assert job.latency[t0] == pytest.approx(1300 - 610)  # first SCHEDULE -> FINISH, all attempts
    assert job.evictions[t0] == 1 and job.machine_id[t0] == "200"
    assert job.latency[by_id["3"]] == pytest.approx(2000 - 613)
    # EV feature counts evictions up to each window's end
    ev_column = job.feature_names.index("evictions_so_far")
    mine = job.window_task == t0
    order = np.argsort(job.window_end[mine])
    assert job.window_features[mine][order, ev_column].tolist() == [0.0, 1.0, 1.0, 1.0]
    np.testing.assert_array_equal(job.available_from, np.sort(job.available_from))
    assert json.loads((tmp_path / "out" / "report.json").read_text())["counts"] == counts


def test_conversion_is_deterministic(trace, tmp_path):
    convert_google(trace, tmp_path / "a", dataset="t", n_shards=2, min_tasks=3)
    convert_google(trace, tmp_path / "b", dataset="t", n_shards=2, min_tasks=3)
    for name in ("manifest.parquet", "jobs/shard-0/1.parquet", "jobs/shard-1/3.parquet"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "a" / name), pd.read_parquet(tmp_path / "b" / name)
        )


def test_truncated_gzip_is_an_error_naming_the_file(trace, tmp_path):
    lines = (
        gzip.decompress((trace / "task_usage" / "part-00001-of-00002.csv.gz").read_bytes())
        .decode()
        .splitlines()
    )
    write_part(trace / "task_usage", "part-00001-of-00002.csv.gz", lines * 2000, corrupt=True)
    with pytest.raises(RawTraceError, match="part-00001-of-00002.csv.gz.*truncated or corrupt"):
        convert_google(trace, tmp_path / "out", dataset="t", n_shards=1, min_tasks=3)
    assert not (tmp_path / "out").exists()  # nothing that looks complete
    assert not (tmp_path / "out.tmp").exists()


def test_bad_rows_are_skipped_counted_and_located(trace, tmp_path):
    path = trace / "task_events" / "part-00000-of-00002.csv.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    lines.insert(2, "1,2,3")  # wrong column count: line 3
    lines.insert(5, event(600, 9, 0, SUBMIT).replace(",9,0.05", ",nine,0.05"))  # unparsable: line 6
    write_part(trace / "task_events", path.name, lines)
    summary = convert_google(trace, tmp_path / "out", dataset="t", n_shards=1, min_tasks=3)
    skipped = summary["skipped_rows"]
    assert skipped["count"] == 2
    assert skipped["by_reason"] == {"wrong column count": 1, "unparsable value": 1}
    assert any(e.endswith(":3: expected 13 columns, got 3") for e in skipped["examples"])
    assert any(":6: not an integer: 'nine'" in e for e in skipped["examples"])
    assert summary["counts"]["jobs_kept"] == 2  # the good rows still convert


def test_missing_parts_are_a_clear_error(tmp_path):
    with pytest.raises(RawTraceError, match="no task_events parts"):
        convert_google(tmp_path, tmp_path / "out", dataset="t", n_shards=1)


def test_alibaba_instances(tmp_path):
    raw = tmp_path / "ali"
    raw.mkdir()
    rows = []
    for i in range(6):
        rows.append(
            f"ins_{i},M1,j_1,1,Terminated,{100 + i},{200 + 10 * i},m_{i},1,1,50.0,80.0,0.3,0.4"
        )
    rows.append("ins_9,M1,j_1,1,Failed,100,150,m_1,1,1,50.0,80.0,0.3,0.4")
    rows.append("ins_10,M1,j_1,1,Terminated,100,100,m_1,1,1,50.0,80.0,0.3,0.4")  # zero length
    rows += [f"ins_{i},R2,j_2,1,Terminated,100,200,m_1,1,1,1,1,1,1" for i in range(2)]
    (raw / "batch_instance.csv").write_text("\n".join(rows) + "\n")
    summary = convert_alibaba(raw, tmp_path / "out", dataset="a", n_shards=1, min_tasks=5)
    assert summary["counts"]["instances_not_terminated"] == 1
    assert summary["counts"]["instances_zero_or_missing_duration"] == 1
    assert summary["counts"]["jobs_dropped_below_min_tasks"] == 1
    manifest = pd.read_parquet(tmp_path / "out" / "manifest.parquet")
    assert manifest["job_id"].tolist() == ["j_1.M1"] and manifest["n_tasks"].iloc[0] == 6
    job = read_job(
        tmp_path / "out" / manifest["path"].iloc[0], "j_1.M1", feature_columns("alibaba-2018")
    )
    assert job.latency.tolist() == [100.0 + 9 * i for i in range(6)]
    np.testing.assert_array_equal(job.available_from, job.task_start)


def _tar_with(path, member, text):
    import io
    import tarfile

    data = text.encode()
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(member)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


def test_alibaba_2018_tarball_is_read_as_a_stream(tmp_path):
    raw = tmp_path / "ali"
    raw.mkdir()
    rows = [
        f"ins_{i},M1,j_1,1,Terminated,{100 + i},{300 + i},m_1,1,1,5,8,0.3,0.4" for i in range(5)
    ]
    _tar_with(raw / "batch_instance.tar.gz", "batch_instance.csv", "\n".join(rows) + "\n")
    summary = convert_alibaba(raw, tmp_path / "out", dataset="a", n_shards=3, min_tasks=5)
    assert summary["counts"]["jobs_kept"] == 1
    assert summary["files_read"] == [f"{raw / 'batch_instance.tar.gz'}:batch_instance.csv"]


def test_alibaba_2017_layout(tmp_path):
    raw = tmp_path / "ali17"
    raw.mkdir()
    # start, end, job id, task id, machine, status, seq, total seq, cpu max, cpu avg, mem max, mem avg
    rows = [f"{10 + i},{60 + 2 * i},7,3,m_{i},Terminated,{i},5,0.9,0.5,0.2,0.1" for i in range(5)]
    (raw / "batch_instance.csv").write_text("\n".join(rows) + "\n")
    convert_alibaba(
        raw, tmp_path / "out", dataset="a17", n_shards=1, min_tasks=5, kind="alibaba-2017"
    )
    manifest = pd.read_parquet(tmp_path / "out" / "manifest.parquet")
    assert manifest["job_id"].tolist() == ["7.3"]
    job = read_job(
        tmp_path / "out" / manifest["path"].iloc[0], "7.3", feature_columns("alibaba-2017")
    )
    assert job.latency.tolist() == [50.0 + i for i in range(5)]
    assert job.window_features[:, 0].tolist() == [0.5] * 5  # cpu_avg is the 10th column in 2017


def test_reference_latency_definition_sums_usage_windows(trace, tmp_path):
    convert_google(
        trace,
        tmp_path / "out",
        dataset="t",
        n_shards=1,
        min_tasks=3,
        latency_definition="usage_windows",
    )
    manifest = pd.read_parquet(tmp_path / "out" / "manifest.parquet").set_index("job_id")
    job = read_job(
        tmp_path / "out" / manifest.loc["1", "path"], "1", feature_columns("google-2011")
    )
    by_id = {tid: i for i, tid in enumerate(job.task_id)}
    # task 0: windows 610-690, 720-900, 900-1200, 1200-1300 (the evicted gap does not count)
    assert job.latency[by_id["0"]] == pytest.approx(80 + 180 + 300 + 100)
    assert job.task_end[by_id["0"]] == pytest.approx(1300)  # the timeline stays the trace's
    with pytest.raises(ValueError, match="latency_definition"):
        convert_google(trace, tmp_path / "bad", dataset="t", n_shards=1, latency_definition="x")
