"""The workflow's download step end to end against a local HTTP server (127.0.0.1 only):
generated Google parts, their machine_events and their SHA256SUM (or Alibaba archives and the
config's digests) are fetched, verified, and convert exactly like the original files."""

import hashlib
import json
import tarfile

import pandas as pd
import pytest
from served_bucket import served_folder, write_google_bucket

from stragglers.convert.layout import download_dataset
from stragglers.convert.one_process import convert_google


@pytest.fixture
def served_trace(tmp_path):
    source = write_google_bucket(tmp_path / "bucket")
    with served_folder(source) as url:
        yield source, url


def test_download_then_convert_matches_the_source(served_trace, tmp_path):
    source, url = served_trace
    n_parts = len(list((source / "task_events").glob("part-*")))
    folder = tmp_path / "download"
    result = download_dataset(
        kind="google-2011",
        download={"parts": f"0-{n_parts - 1}", "base_url": url, "parts_per_table": n_parts},
        folder=str(folder),
        out=str(tmp_path / "done.json"),
    )
    # schema.csv, task_events, task_usage and machine_events' one part
    assert len(result["files"]) == 2 * n_parts + 2
    assert str(folder / MACHINE_EVENTS) in result["files"]
    for path in result["files"]:
        relative = path.split(str(folder) + "/")[1]
        assert (source / relative).read_bytes() == open(path, "rb").read()
    convert_google(source, tmp_path / "a", dataset="t", n_shards=1)
    report = convert_google(folder, tmp_path / "b", dataset="t", n_shards=1)
    assert "machine_events_table_missing" not in report["counts"]
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "a" / "manifest.parquet"),
        pd.read_parquet(tmp_path / "b" / "manifest.parquet"),
    )


def test_machine_tables_off_fetches_no_machine_events(served_trace, tmp_path):
    from stragglers.convert import layout as scatter

    source, url = served_trace
    n_parts = len(list((source / "task_events").glob("part-*")))
    download = {"parts": "0", "base_url": url, "parts_per_table": n_parts, "machine_tables": False}
    result = download_dataset(
        kind="google-2011-events",
        download=download,
        folder=str(tmp_path / "d"),
        out=str(tmp_path / "done.json"),
    )
    assert not any("machine_events" in path for path in result["files"])
    layout = scatter.raw_layout(
        "google-2011-events", {"source": "download", "download": download}, None
    )
    assert (
        layout.tables["machine_events"] == []
        and layout.group_inputs(0) == layout.tables["task_events"]
    )


def test_download_settings_are_checked(tmp_path):
    with pytest.raises(ValueError, match="download.parts"):
        download_dataset(
            kind="google-2011", download={}, folder=str(tmp_path), out=str(tmp_path / "x")
        )
    with pytest.raises(ValueError, match="sha256"):
        download_dataset(
            kind="alibaba-2018",
            download={"url": "http://127.0.0.1:1/x"},
            folder=str(tmp_path),
            out=str(tmp_path / "x"),
        )
    with pytest.raises(ValueError, match="download.machine_tables: expected true or false"):
        download_dataset(
            kind="google-2011",
            download={"parts": "0", "machine_tables": "yes"},
            folder=str(tmp_path),
            out=str(tmp_path / "x"),
        )
    # the machine archives' digests are settings of their own, checked before any request
    from stragglers.convert import layout as scatter

    batch_only = {"url": "http://127.0.0.1:1/v2018Traces/batch_instance.tar.gz", "sha256": "a" * 64}
    for call in (
        lambda: download_dataset(
            kind="alibaba-2018", download=batch_only, folder=str(tmp_path), out=str(tmp_path / "x")
        ),
        lambda: scatter.raw_layout(
            "alibaba-2018", {"source": "download", "download": batch_only}, None
        ),
        lambda: scatter.download_file(
            kind="alibaba-2018",
            download=batch_only,
            folder=str(tmp_path),
            file="machine_meta.tar.gz",
            out=str(tmp_path / "x"),
        ),
    ):
        with pytest.raises(
            ValueError,
            match=r"^download\.machine_meta_sha256: .*machine_meta\.tar\.gz.*machine_tables: false",
        ):
            call()
    with pytest.raises(
        ValueError, match=r"^download\.machine_usage_sha256: 'xyz' is not a SHA-256"
    ):
        scatter.raw_layout(
            "alibaba-2018",
            {
                "source": "download",
                "download": {
                    **batch_only,
                    "machine_meta_sha256": "b" * 64,
                    "machine_usage_sha256": "xyz",
                },
            },
            None,
        )
    # without the machine tables the batch_instance archive alone is enough (and 2017 has none)
    assert scatter.raw_layout(
        "alibaba-2018",
        {"source": "download", "download": {**batch_only, "machine_tables": False}},
        None,
    ).files == ["batch_instance.tar.gz"]
    assert scatter.raw_layout(
        "alibaba-2017", {"source": "download", "download": batch_only}, None
    ).files == ["alibaba-trace-2017.tar.gz"]
    assert not (tmp_path / "x").exists()


def test_per_file_download_jobs_then_scattered_conversion(served_trace, tmp_path):
    """The workflow's download jobs (SHA256SUM, then one job per file) and the scattered
    conversion of what they fetched equal the single-process conversion of the source."""
    from stragglers.convert import layout as scatter

    source, url = served_trace
    n_parts = len(list((source / "task_events").glob("part-*")))
    folder = tmp_path / "download"
    download = {"parts": f"0-{n_parts - 1}", "base_url": url, "parts_per_table": n_parts}
    layout = scatter.raw_layout("google-2011", {"source": "download", "download": download}, None)
    # machine_events (default machine_tables: true) is a file of the DAG, read by convert_prepare
    assert layout.tables["machine_events"] == [MACHINE_EVENTS] == layout.machine_files
    scatter.download_checksums(
        download=download, folder=str(folder), out=str(tmp_path / "sums.json")
    )
    markers = []
    for name in layout.files:
        markers.append(str(tmp_path / "markers" / f"{name}.json"))
        scatter.download_file(
            kind="google-2011", download=download, folder=str(folder), file=name, out=markers[-1]
        )
    done = scatter.download_done(
        kind="google-2011", folder=str(folder), markers=markers, out=str(tmp_path / "done.json")
    )
    assert len(done["files"]) == 2 * n_parts + 1
    for name in layout.files:
        assert (source / name).read_bytes() == (folder / name).read_bytes()
    # the folder the jobs filled is the layout the DAG was built from
    assert (
        scatter.raw_layout("google-2011", {"source": "local"}, str(folder)).tables == layout.tables
    )
    # a part missing from SHA256SUM is refused
    (folder / "SHA256SUM").write_text(
        "".join(
            line + "\n"
            for line in (folder / "SHA256SUM").read_text().splitlines()
            if layout.files[-1] not in line
        )
    )
    from stragglers.traces.download import DownloadError

    with pytest.raises(DownloadError, match="no entry"):
        scatter.download_file(
            kind="google-2011",
            download=download,
            folder=str(folder),
            file=layout.files[-1],
            out=str(tmp_path / "x.json"),
        )
    from test_scatter import run_scattered

    config = {"n_shards": 2, "min_tasks": 100}
    (folder / "SHA256SUM").unlink()
    scattered, _, _ = run_scattered(
        "google-2011", folder, tmp_path / "work", config, parts_per_job=1
    )
    single = tmp_path / "single"
    convert_google(source, single, dataset="d", n_shards=2)
    manifest = pd.read_parquet(single / "manifest.parquet")
    assert len(manifest) > 0
    pd.testing.assert_frame_equal(manifest, pd.read_parquet(scattered / "manifest.parquet"))
    for path in manifest["path"]:
        pd.testing.assert_frame_equal(
            pd.read_parquet(single / path), pd.read_parquet(scattered / path)
        )
    # the downloaded machine_events gave the machines' capacities
    counts = json.loads((scattered / "report.json").read_text())["counts"]
    assert "machine_events_table_missing" not in counts and counts["machine_event_rows"] > 0
    jobs = pd.concat(pd.read_parquet(scattered / path) for path in manifest["path"])
    assert (
        jobs["machine_cpu_capacity"].notna().any()
        and jobs["launch_machine_cpu_capacity"].notna().any()
    )


def test_alibaba_archive_is_one_download_job(served_trace, tmp_path):
    """An Alibaba archive is one file (one `download_file` job) verified against the config's
    sha256; a wrong digest fails the job and the file is not kept under its name."""
    from stragglers.convert import layout as scatter

    source, url = served_trace
    archive = source / "batch_instance.tar.gz"
    archive.write_bytes(b"not really a tarball, only bytes to fetch" * 100)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    download = {"url": f"{url}/batch_instance.tar.gz", "sha256": digest, "machine_tables": False}
    layout = scatter.raw_layout("alibaba-2018", {"source": "download", "download": download}, None)
    assert layout.files == ["batch_instance.tar.gz"] and layout.groups == [
        ["batch_instance.tar.gz"]
    ]
    folder = tmp_path / "download"
    result = scatter.download_file(
        kind="alibaba-2018",
        download=download,
        folder=str(folder),
        file=layout.files[0],
        out=str(tmp_path / "ok.json"),
    )
    assert (folder / "batch_instance.tar.gz").read_bytes() == archive.read_bytes()
    assert result["bytes"] == archive.stat().st_size
    other = tmp_path / "other"
    from stragglers.traces.download import ChecksumMismatchError

    with pytest.raises(ChecksumMismatchError):
        scatter.download_file(
            kind="alibaba-2018",
            download={**download, "sha256": "0" * 64},
            folder=str(other),
            file=layout.files[0],
            out=str(tmp_path / "bad.json"),
        )
    assert not (other / "batch_instance.tar.gz").exists() and not (tmp_path / "bad.json").exists()


MACHINE_EVENTS = "machine_events/part-00000-of-00001.csv.gz"


@pytest.fixture
def served_alibaba(tmp_path):
    """A generated Alibaba 2018 trace packed as the real archives (<table>.tar.gz holding
    <table>.csv), served over HTTP, with each archive's SHA-256."""
    from stragglers.traces.generate import AlibabaGeneratorConfig, generate_alibaba

    source = tmp_path / "alibaba"
    generate_alibaba(source, AlibabaGeneratorConfig.from_dict({"n_jobs": 2, "seed": 3}))
    served = tmp_path / "served" / "v2018Traces"
    served.mkdir(parents=True)
    digests = {}
    for table in ("batch_instance", "machine_meta", "machine_usage"):
        with tarfile.open(served / f"{table}.tar.gz", "w:gz") as tar:
            tar.add(source / f"{table}.csv", arcname=f"{table}.csv")
        digests[table] = hashlib.sha256((served / f"{table}.tar.gz").read_bytes()).hexdigest()
    with served_folder(served.parent) as url:
        yield source, served, f"{url}/v2018Traces", digests


def test_alibaba_machine_archives_are_downloaded_verified_and_converted(served_alibaba, tmp_path):
    """With machine_tables (the default) an Alibaba 2018 download also fetches machine_meta.tar.gz
    and machine_usage.tar.gz from the batch_instance archive's folder, each its own job verified
    against its own setting; the conversion then reads them (the part job waits for them)."""
    from test_scatter import run_scattered, run_single

    from stragglers.convert import layout as scatter
    from stragglers.traces.download import ChecksumMismatchError

    source, served, base, digests = served_alibaba
    download = {
        "url": f"{base}/batch_instance.tar.gz",
        "sha256": digests["batch_instance"],
        "machine_meta_sha256": digests["machine_meta"],
        "machine_usage_sha256": digests["machine_usage"],
    }
    layout = scatter.raw_layout("alibaba-2018", {"source": "download", "download": download}, None)
    assert layout.files == ["batch_instance.tar.gz", "machine_meta.tar.gz", "machine_usage.tar.gz"]
    assert layout.groups == [["batch_instance.tar.gz"]] and layout.group_inputs(0) == layout.files
    folder = tmp_path / "download"
    markers = []
    for name in layout.files:
        markers.append(str(tmp_path / "markers" / f"{name}.json"))
        scatter.download_file(
            kind="alibaba-2018", download=download, folder=str(folder), file=name, out=markers[-1]
        )
        assert (folder / name).read_bytes() == (served / name).read_bytes()
    done = scatter.download_done(
        kind="alibaba-2018", folder=str(folder), markers=markers, out=str(tmp_path / "done.json")
    )
    assert len(done["files"]) == 3
    with pytest.raises(ValueError, match=r"x\.tar\.gz: not one of the files"):
        scatter.download_file(
            kind="alibaba-2018",
            download=download,
            folder=str(folder),
            file="x.tar.gz",
            out=str(tmp_path / "x.json"),
        )

    config = {"n_shards": 2, "min_tasks": 100, "replay": {"checkpoint_interval": 60}}
    scattered, _, _ = run_scattered("alibaba-2018", folder, tmp_path / "work", config)
    report = json.loads((scattered / "report.json").read_text())
    assert not {"machine_meta_table_missing", "machine_usage_table_missing"} & set(report["counts"])
    assert {
        f"{folder}/machine_meta.tar.gz:machine_meta.csv",
        f"{folder}/machine_usage.tar.gz:machine_usage.csv",
    } <= set(report["files_read"])
    single = run_single("alibaba-2018", source, tmp_path / "single", config)
    manifest = pd.read_parquet(single / "manifest.parquet")
    assert len(manifest) > 0
    pd.testing.assert_frame_equal(manifest, pd.read_parquet(scattered / "manifest.parquet"))
    for path in manifest["path"]:
        pd.testing.assert_frame_equal(
            pd.read_parquet(single / path), pd.read_parquet(scattered / path)
        )
    state = pd.read_parquet(scattered / manifest["path"].iloc[0])
    assert (
        state["machine_cpu_num"].notna().all() and state["machine_cpu_util_percent"].notna().any()
    )

    # a machine archive that does not match its configured digest is refused and kept aside
    other = tmp_path / "other"
    bad = {**download, "machine_usage_sha256": digests["machine_meta"]}
    with pytest.raises(ChecksumMismatchError, match="machine_usage.tar.gz"):
        scatter.download_file(
            kind="alibaba-2018",
            download=bad,
            folder=str(other),
            file="machine_usage.tar.gz",
            out=str(tmp_path / "bad.json"),
        )
    assert not (other / "machine_usage.tar.gz").exists() and not (tmp_path / "bad.json").exists()
    assert list(other.glob("machine_usage.tar.gz.bad-sha256-*"))


def download_workflow_config(google_url, n_parts, alibaba_base, digests):
    """tests/configs/download/config.yaml for the given servers."""
    from workflow_runs import load_config

    return load_config(
        "download",
        google_url=google_url,
        google_parts=n_parts,
        google_last_part=n_parts - 1,
        alibaba_base=alibaba_base,
        **{f"{table}_sha256": digest for table, digest in digests.items()},
    )


def run_snakemake(work, config, *args):
    from workflow_runs import run_snakemake, write_config

    run = run_snakemake(
        work, write_config(config, work / "config.yaml"), "--cores", "2", *args, timeout=300
    )
    return run.returncode, run.stdout + run.stderr


CONVERTED = [f"resources/converted/{name}/report.json" for name in ("google-dl", "alibaba-dl")]


def test_snakemake_dag_has_the_machine_table_jobs(tmp_path):
    """Built from the config alone (a dry run contacts no server): one download_file job per
    machine table, which the conversion waits for; bad settings stop the workflow, named."""
    work = tmp_path / "work"
    digests = {
        table: hashlib.sha256(table.encode()).hexdigest()
        for table in ("batch_instance", "machine_meta", "machine_usage")
    }
    config = download_workflow_config(
        "http://127.0.0.1:9", 2, "http://127.0.0.1:9/v2018Traces", digests
    )
    code, output = run_snakemake(work, config, "-n", *CONVERTED)
    assert code == 0, output[-3000:]
    inputs = [line for line in output.splitlines() if "input:" in line]
    # convert_prepare (google-2011) and Alibaba's convert_part wait for the machine tables' jobs
    assert any(
        f"google-dl.files/{MACHINE_EVENTS}.json" in line and "task_events" in line
        for line in inputs
    )
    assert any(
        all(f"alibaba-dl.files/{name}.tar.gz.json" in line for name in digests) for line in inputs
    )
    config["datasets"]["google-dl"]["download"]["machine_tables"] = "yes"
    del config["datasets"]["alibaba-dl"]["download"]["machine_usage_sha256"]
    code, output = run_snakemake(work, config, "-n", *CONVERTED)
    assert code != 0 and "'machine_tables'" in output and "'yes' is not of type 'boolean'" in output
    config["datasets"]["google-dl"]["download"]["machine_tables"] = False
    code, output = run_snakemake(work, config, "-n", *CONVERTED)
    assert (
        code != 0
        and "download.machine_usage_sha256: alibaba-2018 also downloads machine_usage.tar.gz"
        in output
    )


@pytest.mark.e2e
def test_snakemake_downloads_and_converts_the_machine_tables(
    served_trace, served_alibaba, tmp_path
):
    """The workflow itself (download_checksums, one download_file job per file, the scattered
    conversion) against the served Google bucket and Alibaba archives: the machine tables are
    fetched, and the conversion reports none of them missing (about 25 s: 17 jobs)."""
    source, url = served_trace
    _, _, alibaba_base, digests = served_alibaba
    n_parts = len(list((source / "task_events").glob("part-*")))
    work = tmp_path / "work"
    config = download_workflow_config(url, n_parts, alibaba_base, digests)
    targets = CONVERTED
    code, output = run_snakemake(work, config, *targets)
    assert code == 0, output[-4000:]
    google = json.loads((work / targets[0]).read_text())
    alibaba = json.loads((work / targets[1]).read_text())
    assert (
        "machine_events_table_missing" not in google["counts"]
        and google["counts"]["machine_event_rows"] > 0
    )
    assert not {"machine_meta_table_missing", "machine_usage_table_missing"} & set(
        alibaba["counts"]
    )
    assert (work / "resources/download/google-dl.files" / f"{MACHINE_EVENTS}.json").is_file()
    for name in ("machine_meta.tar.gz", "machine_usage.tar.gz"):
        assert (work / "resources/download/alibaba-dl" / name).read_bytes() == (
            tmp_path / "served" / "v2018Traces" / name
        ).read_bytes()
