"""The scattered conversion (prepare, one job per group of parts, one per shard, manifest: the
workflow's rules, run here stage by stage) gives exactly the single-process conversion."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_runs import ROOT

from stragglers.convert import layout as scatter
from stragglers.convert.common import ShardSpill, list_parts
from stragglers.convert.one_process import convert_dataset
from stragglers.traces.generate import (
    AlibabaGeneratorConfig,
    GoogleGeneratorConfig,
    generate_alibaba,
    generate_google,
)

SHARED_GOOGLE = ROOT.parent / "shared" / "data" / "google-2011"
DEFAULT_CONFIG = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def run_scattered(kind, raw_dir, work, dataset_config, *, parts_per_job=1, dataset="d"):
    """The stages as the workflow's jobs run them, each with only its own inputs."""
    config = {**dataset_config, "source": "local", "convert": {"parts_per_job": parts_per_job}}
    layout = scatter.raw_layout(kind, config, str(raw_dir))
    common = {"dataset": dataset, "min_tasks": dataset_config.get("min_tasks", 100)}
    n_shards = dataset_config["n_shards"]
    priorities = dataset_config.get("production_priorities", [9, 10, 11])
    prepared = None
    stage_reports = []
    if kind == "google-2011":
        prepared = str(work / "prepared")
        scatter.prepare(
            raw_dir=str(raw_dir),
            event_parts=layout.tables["task_events"],
            out_dir=prepared,
            n_shards=n_shards,
            priorities=priorities,
            machine_event_parts=layout.tables["machine_events"],
            **common,
        )
        stage_reports.append(prepared)
    spills = []
    for group, parts in enumerate(layout.groups):
        spills.append(str(work / "spill" / f"group-{group}"))
        stage_reports.append(str(work / "reports" / f"group-{group}.json"))
        scatter.convert_part(
            kind=kind,
            raw_dir=str(raw_dir),
            parts=parts,
            out_dir=spills[-1],
            out_report=stage_reports[-1],
            n_shards=n_shards,
            priorities=priorities,
            grid=dataset_config.get("replay", {}),
            prepared_dir=prepared,
            machine_event_parts=layout.tables.get("machine_events", []),
            configured_files=layout.files,
            **common,
        )
    out = work / "converted"
    for shard in range(n_shards):
        (work / "shards").mkdir(exist_ok=True)
        scatter.gather(
            kind=kind,
            spill_dirs=spills,
            shard=shard,
            jobs_dir=str(out / "jobs" / f"shard-{shard}"),
            out_manifest=str(work / "shards" / f"shard-{shard}.parquet"),
            out_report=str(work / "shards" / f"shard-{shard}.json"),
            latency_definition=dataset_config.get("latency_definition", "schedule_to_finish"),
            prepared_dir=prepared,
            **common,
        )
    scatter.manifest(
        kind=kind,
        dataset=dataset,
        stage_reports=stage_reports,
        out_dir=str(out),
        shard_manifests=[str(work / "shards" / f"shard-{k}.parquet") for k in range(n_shards)],
        shard_reports=[str(work / "shards" / f"shard-{k}.json") for k in range(n_shards)],
    )
    return out, spills, layout


def run_single(kind, raw_dir, out, dataset_config, dataset="d"):
    convert_dataset(
        kind=kind,
        raw_dir=str(raw_dir),
        out_dir=str(out),
        dataset=dataset,
        n_shards=dataset_config["n_shards"],
        min_tasks=dataset_config.get("min_tasks", 100),
        priorities=dataset_config.get("production_priorities"),
        grid=dataset_config.get("replay"),
        latency_definition=dataset_config.get("latency_definition", "schedule_to_finish"),
    )
    return out


def assert_same_conversion(single: Path, scattered: Path):
    manifest = pd.read_parquet(single / "manifest.parquet")
    pd.testing.assert_frame_equal(manifest, pd.read_parquet(scattered / "manifest.parquet"))
    assert len(manifest) > 0
    for path in manifest["path"]:
        pd.testing.assert_frame_equal(
            pd.read_parquet(single / path), pd.read_parquet(scattered / path)
        )
    a = json.loads((single / "report.json").read_text())
    b = json.loads((scattered / "report.json").read_text())
    assert a["counts"] == b["counts"]
    assert a["skipped_rows"] == b["skipped_rows"]
    assert a["files_read"] == b["files_read"]
    # nothing else in the converted folder (no spill or staging left behind)
    files = lambda root: sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files(single) == files(scattered)


@pytest.fixture(scope="module")
def google_raw(tmp_path_factory):
    """The default config's Google dataset, generated in 4 time parts (jobs straddle them)."""
    raw = tmp_path_factory.mktemp("google") / "raw"
    settings = {
        "seed": DEFAULT_CONFIG["seed"],
        **DEFAULT_CONFIG["datasets"]["google-synthetic"]["generator"],
        "n_parts": 4,
    }
    generate_google(raw, GoogleGeneratorConfig.from_dict(settings))
    return raw


@pytest.mark.parametrize("parts_per_job", [1, 3])
def test_google_scattered_equals_single_process(google_raw, tmp_path, parts_per_job):
    config = DEFAULT_CONFIG["datasets"]["google-synthetic"]
    single = run_single("google-2011", google_raw, tmp_path / "single", config)
    scattered, spills, layout = run_scattered(
        "google-2011", google_raw, tmp_path / "work", config, parts_per_job=parts_per_job
    )
    assert len(layout.groups) == {1: 4, 3: 2}[parts_per_job]
    assert_same_conversion(single, scattered)
    # the comparison covers stitching: some task's windows were spilled by two part groups
    keys = [
        set(ShardSpill.read(Path(spill, "shards"), shard).column("task_key").to_pylist())
        for spill in spills
        for shard in range(config["n_shards"])
        if ShardSpill.read(Path(spill, "shards"), shard) is not None
    ]
    assert any(a & b for i, a in enumerate(keys) for b in keys[i + 1 :])


def test_google_usage_windows_latency_scattered(google_raw, tmp_path):
    config = {
        **DEFAULT_CONFIG["datasets"]["google-synthetic"],
        "latency_definition": "usage_windows",
    }
    single = run_single("google-2011", google_raw, tmp_path / "single", config)
    scattered, _, _ = run_scattered("google-2011", google_raw, tmp_path / "work", config)
    assert_same_conversion(single, scattered)


def test_google_events_kind_scattered(google_raw, tmp_path):
    config = {
        **DEFAULT_CONFIG["datasets"]["google-synthetic"],
        "replay": {"grid_origin": 600, "checkpoint_interval": 300},
    }
    single = run_single("google-2011-events", google_raw, tmp_path / "single", config)
    scattered, _, layout = run_scattered(
        "google-2011-events", google_raw, tmp_path / "work", config
    )
    assert len(layout.groups) == 1  # machine load needs every job's events: one group
    assert_same_conversion(single, scattered)


def test_alibaba_scattered_equals_single_process(tmp_path):
    config = DEFAULT_CONFIG["datasets"]["alibaba-synthetic"]
    raw = tmp_path / "raw"
    generate_alibaba(
        raw,
        AlibabaGeneratorConfig.from_dict({"seed": DEFAULT_CONFIG["seed"], **config["generator"]}),
    )
    single = run_single("alibaba-2018", raw, tmp_path / "single", config)
    scattered, _, layout = run_scattered("alibaba-2018", raw, tmp_path / "work", config)
    assert layout.groups == [["batch_instance.tar.gz"]]  # the table is one part
    assert_same_conversion(single, scattered)


@pytest.mark.skipif(not SHARED_GOOGLE.exists(), reason="../shared/data/google-2011 is absent")
def test_real_rows_scattered_equals_single_process(tmp_path):
    config = yaml.safe_load((ROOT / "config" / "google-2011-shared.yaml").read_text())["datasets"][
        "google-2011-events"
    ]
    single = run_single("google-2011-events", SHARED_GOOGLE, tmp_path / "single", config)
    scattered, _, _ = run_scattered("google-2011-events", SHARED_GOOGLE, tmp_path / "work", config)
    assert_same_conversion(single, scattered)


def test_raw_layout_from_config(tmp_path):
    generate = scatter.raw_layout(
        "google-2011",
        {"source": "generate", "generator": {"n_parts": 5}, "convert": {"parts_per_job": 2}},
        None,
    )
    assert generate.tables["task_usage"][0] == "task_usage/part-00000-of-00005.csv.gz"
    assert [len(g) for g in generate.groups] == [2, 2, 1]
    download = scatter.raw_layout(
        "google-2011", {"source": "download", "download": {"parts": "0-2,7"}}, None
    )
    assert download.tables["task_events"] == [
        f"task_events/part-{i:05d}-of-00500.csv.gz" for i in (0, 1, 2, 7)
    ]
    # 4 task_events + 4 task_usage parts, and machine_events' one part (whatever the selection)
    assert len(download.files) == 9 and len(download.groups) == 4
    assert download.tables["machine_events"] == ["machine_events/part-00000-of-00001.csv.gz"]
    without = scatter.raw_layout(
        "google-2011",
        {"source": "download", "download": {"parts": "0-2,7", "machine_tables": False}},
        None,
    )
    assert without.tables["machine_events"] == [] and len(without.files) == 8
    events = scatter.raw_layout(
        "google-2011-events", {"source": "download", "download": {"parts": "all"}}, None
    )
    assert len(events.groups) == 1 and len(events.groups[0]) == 500
    with pytest.raises(ValueError, match="download.parts"):
        scatter.raw_layout(
            "google-2011", {"source": "download", "download": {"parts": "3-1"}}, None
        )


def test_missing_part_is_an_error_naming_it(google_raw, tmp_path):
    with pytest.raises(FileNotFoundError, match="part-00009"):
        scatter.check_parts_present(google_raw, ["task_usage/part-00009-of-00010.csv.gz"])
    assert len(list_parts(google_raw, "task_usage")) == 4


def test_only_parts_the_configuration_leaves_out_are_warned_about(google_raw, caplog):
    """A group's job reads its own parts; the other groups' parts are in the configuration and
    not extra, a part no group lists (an earlier, larger download) is."""
    parts = [str(p.relative_to(google_raw)) for p in list_parts(google_raw, "task_usage")]
    with caplog.at_level("WARNING", logger="stragglers.convert.layout"):
        scatter._google_parts(google_raw, parts[:1], "task_usage", parts)
        assert not caplog.records
        scatter._google_parts(google_raw, parts[:1], "task_usage", parts[:2])
    (record,) = caplog.records
    assert "2 task_usage part(s)" in record.getMessage()
    assert parts[2] in record.getMessage() and parts[1] not in record.getMessage()


def test_dag_of_a_download_scatters_per_file_part_and_shard(tmp_path):
    """`snakemake -n` (no network needed): one download job per file, one convert_part per
    group, one gather per shard; each predict job's input is its own shard's folder."""
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["datasets"] = {
        "g": {
            "kind": "google-2011",
            "source": "download",
            "download": {"parts": "0-4"},
            "convert": {"parts_per_job": 2},
            "n_shards": 3,
        }
    }
    config["methods"] = {"GBTR": {}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--snakefile",
            str(ROOT / "Snakefile"),
            "--directory",
            str(tmp_path),
            "--configfile",
            str(path),
            "--replace-workflow-config",
            "--printshellcmds",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    counts = dict(
        (line.split()[0], int(line.split()[1]))
        for line in run.stdout.splitlines()
        if len(line.split()) == 2 and line.split()[1].isdigit()
    )
    assert (
        counts["download_checksums"] == 1 and counts["download_file"] == 11
    )  # 5 + 5 parts, machine_events
    assert counts["convert_prepare"] == 1 and counts["convert_part"] == 3
    assert counts["gather_shard"] == 3 and counts["convert_manifest"] == 1
    assert counts["predict"] == 3
    predict_inputs = [
        line
        for line in run.stdout.splitlines()
        if "input:" in line and "manifest.parquet, resources" in line
    ]
    # (the method's own files follow the shard's folder among the inputs)
    assert any(
        item.strip().endswith("jobs/shard-1") for line in predict_inputs for item in line.split(",")
    )
    # convert_prepare waits for the machine_events download (it reads the capacities)
    machine_marker = "resources/download/g.files/machine_events/part-00000-of-00001.csv.gz.json"
    assert any(
        "input:" in line and machine_marker in line and "task_events" in line
        for line in run.stdout.splitlines()
    )


@pytest.mark.parametrize("with_usage", [False, True])
def test_task_table_scattered_equals_single_process(tmp_path, with_usage):
    from test_tasks_table import generated_task_table

    raw = generated_task_table(tmp_path / "raw", seed=4)
    if with_usage:  # a usage table: each finished task sampled once over its life
        tasks = pd.read_csv(raw / "tasks.csv")
        done = tasks[tasks["status"] == "finished"]
        usage = done[["job_id", "task_id", "attempt"]].assign(
            window_start=done["start_time"], window_end=done["end_time"], cpu=done["request_cpu"]
        )
        usage.to_parquet(raw / "usage.parquet", index=False)
    config = {"kind": "tasks-table", "n_shards": 3, "min_tasks": 50}
    config["replay"] = {"grid_origin": 0, "checkpoint_interval": 10}
    single = run_single("tasks-table", raw, tmp_path / "single", config)
    scattered, _, layout = run_scattered("tasks-table", raw, tmp_path / "work", config)
    expected = ["tasks.csv", "usage.parquet"] if with_usage else ["tasks.csv"]
    assert layout.groups == [["tasks.csv"]] and layout.group_inputs(0) == expected
    assert_same_conversion(single, scattered)
    from stragglers.formats.datasets import feature_columns

    features = feature_columns("tasks-table", scattered)
    assert features == feature_columns("tasks-table", single)
    assert ("cpu" in features) == with_usage and ("machine_load" in features) != with_usage
