"""The `nurd-timeseries` kind: the NURD authors' per-task layout, the four real Google jobs
shipped in stragglers/data/google-2011-usage, bad files, and the export back to the layout."""

from __future__ import annotations

import hashlib
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from stragglers.convert.export import export_nurd_timeseries
from stragglers.convert.layout import raw_layout
from stragglers.convert.nurd_timeseries import NurdTimeseriesError, raw_entries
from stragglers.convert.one_process import convert_dataset
from stragglers.formats.datasets import feature_columns
from stragglers.formats.jobs import iter_shard_jobs, read_manifest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "stragglers" / "data" / "google-2011-usage"
SHARED = ROOT.parent / "shared" / "data" / "google-2011" / "nurd-timeseries"
JOBS = {"6266469130": 1000, "6274140245": 189, "6308689702": 350, "6343048076": 152}


def read_converted(path):
    return pd.read_parquet(path)


def convert(raw_dir, out, **settings):
    return convert_dataset(
        kind="nurd-timeseries",
        raw_dir=str(raw_dir),
        out_dir=str(out),
        dataset="real",
        n_shards=settings.pop("n_shards", 1),
        min_tasks=settings.pop("min_tasks", 100),
        **settings,
    )


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    out = tmp_path_factory.mktemp("shipped") / "converted"
    return out, convert(SHIPPED, out)


def row(start, end, job, task, machine, ev=0, fl=0, cpu=0.01):
    values = [start, end, job, task, machine, cpu, *[0.001] * 14, ev, fl]
    return ",".join(
        [*(str(v) for v in values[:5]), *(f"{v:f}" for v in values[5:20]), str(ev), str(fl)]
    )


def write_job(folder: Path, job: str, tasks: dict[int, list[str]]) -> Path:
    (folder / job).mkdir(parents=True, exist_ok=True)
    for index, rows in tasks.items():
        (folder / job / str(index)).write_text("\n".join(rows) + "\n")
    return folder


def small_job(folder: Path, job: str = "77", n: int = 4) -> Path:
    """n tasks of one window each, 100 s apart in length."""
    return write_job(
        folder,
        job,
        {i: [row(600_000_000, 600_000_000 + (i + 1) * 100_000_000, job, i, 5)] for i in range(n)},
    )


# ---------------------------------------------------------------------------------------------
# the shipped real jobs
def test_the_archive_matches_its_checksum_file():
    line = (SHIPPED / "SHA256SUM").read_text().split()
    digest = hashlib.sha256((SHIPPED / "nurd-timeseries.tar.gz").read_bytes()).hexdigest()
    assert line == [digest, "*nurd-timeseries.tar.gz"]
    assert raw_entries(SHIPPED) == ["nurd-timeseries.tar.gz"]


def test_the_four_real_jobs_convert_whole(shipped):
    out, summary = shipped
    counts = summary["counts"]
    manifest = read_manifest(out)
    assert dict(zip(manifest["job_id"].astype(str), manifest["n_tasks"])) == JOBS
    assert counts["task_files_read"] == 1691 and counts["windows_kept"] == 13211
    # real, messy tasks are read, never rejected: reschedules, overlapping windows
    assert counts["tasks_with_several_attempts"] == 466
    assert counts["tasks_with_overlapping_windows"] == 11
    assert counts["usage_windows_overlapping_an_earlier_window"] == 21
    assert counts["tasks_sum_of_windows_differs_from_span"] == 465
    assert counts["attempts_finished"] == 1691
    assert counts["attempts_evicted"] + counts["attempts_failed"] + counts["attempts_lost"] == (
        counts["attempt_rows_read"] - 1691
    )
    assert counts["usage_windows_outside_task_life"] == 0
    assert feature_columns("nurd-timeseries", out) == [
        "cpu_rate",
        "maximum_cpu_rate",
        "sampled_cpu_usage",
        "canonical_memory_usage",
        "assigned_memory_usage",
        "maximum_memory_usage",
        "unmapped_page_cache",
        "total_page_cache",
        "disk_io_time",
        "maximum_disk_io_time",
        "local_disk_space_usage",
        "cycles_per_instruction",
        "memory_accesses_per_instruction",
        "evictions_so_far",
        "failures_so_far",
    ]


def test_ev_and_fl_become_running_totals_of_the_files_counts(shipped, tmp_path):
    out, _ = shipped
    with tarfile.open(SHIPPED / "nurd-timeseries.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    raw = pd.read_csv(tmp_path / "6274140245" / "23", header=None)
    job = next(iter_shard_jobs(out, "nurd-timeseries", None, only_jobs=["6274140245"]))
    frame = read_converted(out / read_manifest(out).set_index("job_id").loc["6274140245", "path"])
    task = frame[frame["task_id"] == "23"].sort_values("window_start", kind="stable")
    assert len(task) == len(raw)
    np.testing.assert_array_equal(task["evictions_so_far"], raw[20].cumsum())
    np.testing.assert_array_equal(task["failures_so_far"], raw[21].cumsum())
    np.testing.assert_allclose(task["cpu_rate"], raw[5])
    assert task["latency"].iloc[0] == pytest.approx((raw[1].max() - raw[0].min()) / 1e6)
    assert job.n_tasks == 189


def test_the_folder_and_its_archive_convert_alike(shipped, tmp_path):
    out, summary = shipped
    folder = tmp_path / "raw"
    with tarfile.open(SHIPPED / "nurd-timeseries.tar.gz") as archive:
        archive.extractall(folder, filter="data")
    assert raw_entries(folder) == sorted(JOBS)
    again = convert(folder, tmp_path / "converted")
    assert again["counts"] == summary["counts"]
    for job_id in JOBS:
        path = read_manifest(out).set_index("job_id").loc[job_id, "path"]
        pd.testing.assert_frame_equal(
            read_converted(out / path), read_converted(tmp_path / "converted" / path)
        )


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} is absent")
def test_the_shipped_archive_holds_the_shared_files_unmodified(tmp_path):
    with tarfile.open(SHIPPED / "nurd-timeseries.tar.gz") as archive:
        members = {m.name: archive.extractfile(m).read() for m in archive if m.isfile()}
    shared = {
        f"{p.parent.name}/{p.name}": p.read_bytes() for p in SHARED.glob("*/*") if p.is_file()
    }
    assert members == shared


def test_the_usage_windows_latency_is_the_sum_of_window_lengths(shipped, tmp_path):
    out, _ = shipped
    again = convert(SHIPPED, tmp_path / "sum", latency_definition="usage_windows")
    assert again["counts"]["jobs_kept"] == 4
    path = read_manifest(out).set_index("job_id").loc["6343048076", "path"]
    span, windows = read_converted(out / path), read_converted(tmp_path / "sum" / path)
    by_task = windows.groupby("task")
    lengths = (windows["window_end"] - windows["window_start"]).groupby(windows["task"]).sum()
    np.testing.assert_allclose(by_task["latency"].first(), lengths)
    differ = span.groupby("task")["latency"].first() != by_task["latency"].first()
    assert 0 < differ.sum() < len(differ)  # only the rescheduled tasks


def test_the_paper_protocol_gives_the_released_scripts_numbers(shipped):
    """run_ts.py (gamma 0) on the four jobs, per job (TPR, FPR, F1; docs/notes/pipeline.md), with
    the default config's replay settings of the dataset (a 60 s causal grid, the aligned
    timeline's 300 s step: each of the files' rows one step)."""
    import yaml

    from stragglers.evaluate.metrics import job_metrics
    from stragglers.formats.datasets import last_columns
    from stragglers.methods import get_method
    from stragglers.replay.core import ReplaySettings, dataset_replay
    from stragglers.replay.runner import run_method_on_jobs

    out, _ = shipped
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    replay = dataset_replay(config["replay"], config["datasets"]["google-2011-usage"])
    settings = ReplaySettings(**{**replay, "protocol": "paper", "overrides": None})
    assert settings.checkpoint_interval == 60 and settings.aligned_step == 300
    script = {  # job: (TPR, FPR, F1) as the released run_ts.py prints them
        "GBTR": {
            "6266469130": (0.375, 0.0, 0.545),
            "6274140245": (0.455, 0.0, 0.625),
            "6308689702": (0.824, 0.0, 0.903),
            "6343048076": (0.0, 0.0, 0.0),
        },
        "NURD": {
            "6266469130": (0.607, 0.148, 0.34),
            "6274140245": (0.455, 0.0, 0.625),
            "6308689702": (0.824, 0.0, 0.903),
            "6343048076": (0.8, 0.009, 0.857),
        },
    }
    for method, params in (("GBTR", {}), ("NURD", {"alpha": 0.0, "epsilon": 0.05})):
        tasks, rows = run_method_on_jobs(
            iter_shard_jobs(out, "nurd-timeseries", None),
            get_method(method),
            params,
            settings,
            last_columns("nurd-timeseries", out),
            20220301,
            "real",
        )
        metrics = job_metrics(tasks, rows).set_index("job_id")
        for job_id, expected in script[method].items():
            got = metrics.loc[job_id, ["TPR", "FPR", "F1"]].to_numpy(float)
            np.testing.assert_allclose(got, expected, atol=5e-4, err_msg=f"{method} {job_id}")


# ---------------------------------------------------------------------------------------------
# attempts, hand-made
def test_reschedules_become_attempts(tmp_path):
    job = "9"
    rows = {
        # evicted from machine 1 (EV counted in its window), a tail window there, then machine 2
        0: [
            row(1_000_000_000, 1_030_000_000, job, 0, 1, ev=1),
            row(1_029_000_000, 1_100_000_000, job, 0, 2),
            row(1_030_000_000, 1_031_000_000, job, 0, 1),
            row(1_100_000_000, 1_200_000_000, job, 0, 2),
        ],
        # a gap on its one machine: a second attempt there, ended without an event: lost
        1: [
            row(1_000_000_000, 1_050_000_000, job, 1, 3),
            row(1_090_000_000, 1_150_000_000, job, 1, 3),
        ],
        2: [
            row(1_000_000_000, 1_020_000_000, job, 2, 4, fl=1),
            row(1_020_000_000, 1_040_000_000, job, 2, 5),
        ],
    }
    write_job(tmp_path / "raw", job, rows)
    summary = convert(tmp_path / "raw", tmp_path / "out", min_tasks=2)
    counts = summary["counts"]
    assert counts["attempt_rows_read"] == 6
    assert counts["attempts_evicted"] == 1 and counts["attempts_lost"] == 1
    assert counts["attempts_failed"] == 1 and counts["attempts_finished"] == 3
    assert counts["tasks_with_overlapping_windows"] == 1
    assert counts["usage_windows_overlapping_an_earlier_window"] == 2
    frame = read_converted(tmp_path / "out" / read_manifest(tmp_path / "out")["path"].iloc[0])
    first = frame[frame["task_id"] == "0"]
    assert first["machine_id"].iloc[0] == "2"  # the finished attempt's machine
    assert first["latency"].iloc[0] == pytest.approx(200.0)  # first start to last end
    assert first["evictions"].iloc[0] == 1
    assert sorted(first["evictions_so_far"]) == [1, 1, 1, 1]


def test_a_job_below_min_tasks_is_dropped_and_counted(tmp_path):
    small_job(tmp_path / "raw", "1", n=3)
    small_job(tmp_path / "raw", "2", n=5)
    summary = convert(tmp_path / "raw", tmp_path / "out", min_tasks=4)
    assert summary["counts"]["jobs_dropped_below_min_tasks"] == 1
    assert list(read_manifest(tmp_path / "out")["job_id"]) == ["2"]


def test_the_layout_lists_the_archives_or_the_job_folders(tmp_path):
    small_job(tmp_path / "raw")
    spec = {"source": "local", "raw_dir": str(tmp_path / "raw"), "n_shards": 1}
    assert raw_layout("nurd-timeseries", spec, str(tmp_path / "raw")).groups == [["77"]]
    with pytest.raises(ValueError, match="source: local"):
        raw_layout("nurd-timeseries", {**spec, "source": "generate"}, None)
    (tmp_path / "empty").mkdir()
    with pytest.raises(NurdTimeseriesError, match="no job folder"):
        raw_entries(tmp_path / "empty")


# ---------------------------------------------------------------------------------------------
# bad files: an error naming the file, the row and the column, and nothing written
@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda t: t.replace(",0,0\n", ",0\n", 1), r"77/0: row 1: 21 fields, the layout has 22"),
        (
            lambda t: t.replace("0.010000", "high", 1),
            r"77/0: row 1, column 6 \(MCU\): 'high' is not a number",
        ),
        (
            lambda t: t.replace("600000000,700000000", "700000000,600000000", 1),
            r"77/0: row 1, column 2 \(ET\): the window ends \(600000000\) before it starts \(700000000\)",
        ),
        (
            lambda t: t.replace(",77,0,", ",78,0,", 1),
            r"77/0: row 1, column 3 \(JI\): job '78', but the file is in folder 77",
        ),
        (
            lambda t: t.replace(",77,0,", ",77,3,", 1),
            r"77/0: row 1, column 4 \(TI\): task index 3, but the file is task 0",
        ),
        (
            lambda t: t[: t.rindex(",0,0")] + ",0.5,0\n",
            r"77/0: row 1, column 21 \(EV\): 0.5 is not a non-negative integer",
        ),
        (lambda t: t.replace("600000000,", ",", 1), r"77/0: row 1, column 1 \(ST\): empty"),
    ],
)
def test_a_malformed_file_stops_the_conversion(tmp_path, edit, message):
    raw = small_job(tmp_path / "raw")
    path = raw / "77" / "0"
    path.write_text(edit(path.read_text()))
    with pytest.raises(NurdTimeseriesError, match=message):
        convert(raw, tmp_path / "out", min_tasks=2)
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "out.tmp").exists()


def test_a_missing_task_index_or_a_badly_named_file_stops_it(tmp_path):
    raw = small_job(tmp_path / "raw")
    (raw / "77" / "2").unlink()
    with pytest.raises(NurdTimeseriesError, match="job 77: task index 2 is missing"):
        convert(raw, tmp_path / "out", min_tasks=2)
    (raw / "77" / "2").write_text(row(1, 2, "77", 2, 5) + "\n")
    (raw / "77" / "task-4").write_text(row(1, 2, "77", 4, 5) + "\n")
    with pytest.raises(NurdTimeseriesError, match="must be named by its task index"):
        convert(raw, tmp_path / "out", min_tasks=2)
    assert not (tmp_path / "out").exists()


def test_a_corrupt_archive_names_itself(tmp_path):
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "jobs.tar.gz").write_bytes(b"not a tarball")
    with pytest.raises(NurdTimeseriesError, match=r"jobs\.tar\.gz: cannot be read"):
        convert(tmp_path / "raw", tmp_path / "out")


# ---------------------------------------------------------------------------------------------
# the export back to the layout
def test_export_round_trip_of_the_real_jobs(shipped, tmp_path):
    out, summary = shipped
    exported = tmp_path / "layout"
    written = export_nurd_timeseries(out, exported)
    assert written == {"jobs": 4, "task_files": 1691, "windows": 13211}
    again = convert(exported, tmp_path / "again")
    assert again["counts"]["windows_kept"] == 13211
    for job_id in JOBS:
        path = read_manifest(out).set_index("job_id").loc[job_id, "path"]
        before = read_converted(out / path)
        after = read_converted(tmp_path / "again" / path)
        for column in [c for c in before.columns if c not in ("evictions", "failures")]:
            pd.testing.assert_series_equal(before[column], after[column], check_names=False)
    # the numbers of every file equal the original's (the text may differ: 0.000000 -> 0.0)
    with tarfile.open(SHIPPED / "nurd-timeseries.tar.gz") as archive:
        member = archive.extractfile("6308689702/17").read().decode()
    original = np.loadtxt(member.splitlines(), delimiter=",")
    np.testing.assert_array_equal(
        np.loadtxt(exported / "6308689702" / "17", delimiter=","), original
    )


def test_export_of_a_generated_dataset_reads_back(tmp_path):
    """A task table's windows through the layout and back: same windows and features."""
    from stragglers.traces.generate.google import generate_google

    raw = tmp_path / "raw"
    generate_google(raw, {"n_jobs": 3, "seed": 3})
    convert_dataset(
        kind="google-2011",
        raw_dir=str(raw),
        out_dir=str(tmp_path / "g"),
        dataset="g",
        n_shards=1,
        min_tasks=100,
    )
    export_nurd_timeseries(tmp_path / "g", tmp_path / "layout")
    convert(tmp_path / "layout", tmp_path / "back")
    before_manifest, after_manifest = (
        read_manifest(tmp_path / "g"),
        read_manifest(tmp_path / "back"),
    )
    assert list(before_manifest["n_tasks"]) == list(after_manifest["n_tasks"])
    features = [
        c
        for c in feature_columns("google-2011")
        if c not in ("evictions_so_far", "failures_so_far")
    ]
    for before_path, after_path in zip(before_manifest["path"], after_manifest["path"]):
        before = read_converted(tmp_path / "g" / before_path).sort_values(
            ["task_id", "window_start"], kind="stable"
        )
        after = read_converted(tmp_path / "back" / after_path)
        after = after.sort_values(["window_start"], kind="stable")
        # task ids become positions: compare window sets job-wide, in time then feature order
        key = ["window_start", "window_end", *features]
        left = before[key].fillna(0).sort_values(key, ignore_index=True)
        right = after[key].sort_values(key, ignore_index=True)
        pd.testing.assert_frame_equal(left, right, check_dtype=False)
    shutil.rmtree(tmp_path / "layout")
