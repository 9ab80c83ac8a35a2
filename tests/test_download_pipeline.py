"""The workflow's download step end to end against a local HTTP server (127.0.0.1 only):
generated Google parts and their SHA256SUM are fetched, verified, and convert exactly like the
original files."""

import hashlib
import shutil

import pandas as pd
import pytest

from served_bucket import served_folder, write_google_bucket
from stragglers.convert import convert_google
from stragglers.pipeline import download_trace


@pytest.fixture
def served_trace(tmp_path):
    source = write_google_bucket(tmp_path / "bucket")
    with served_folder(source) as url:
        yield source, url


def test_download_then_convert_matches_the_source(served_trace, tmp_path):
    source, url = served_trace
    n_parts = len(list((source / "task_events").glob("part-*")))
    folder = tmp_path / "download"
    result = download_trace(
        kind="google-2011",
        download={"parts": f"0-{n_parts - 1}", "base_url": url, "parts_per_table": n_parts},
        folder=str(folder),
        out=str(tmp_path / "done.json"),
    )
    assert len(result["files"]) == 2 * n_parts + 1  # schema.csv, task_events and task_usage
    for path in result["files"]:
        relative = path.split(str(folder) + "/")[1]
        assert (source / relative).read_bytes() == open(path, "rb").read()
    convert_google(source, tmp_path / "a", dataset="t", n_shards=1)
    convert_google(folder, tmp_path / "b", dataset="t", n_shards=1)
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "a" / "manifest.parquet"),
        pd.read_parquet(tmp_path / "b" / "manifest.parquet"),
    )


def test_download_settings_are_checked(tmp_path):
    with pytest.raises(ValueError, match="download.parts"):
        download_trace(kind="google-2011", download={}, folder=str(tmp_path), out=str(tmp_path / "x"))
    with pytest.raises(ValueError, match="sha256"):
        download_trace(kind="alibaba-2018", download={"url": "http://127.0.0.1:1/x"},
                       folder=str(tmp_path), out=str(tmp_path / "x"))


def test_per_file_download_jobs_then_scattered_conversion(served_trace, tmp_path):
    """The workflow's download jobs (SHA256SUM, then one job per file) and the scattered
    conversion of what they fetched equal the single-process conversion of the source."""
    from stragglers import scatter

    source, url = served_trace
    n_parts = len(list((source / "task_events").glob("part-*")))
    folder = tmp_path / "download"
    download = {"parts": f"0-{n_parts - 1}", "base_url": url, "parts_per_table": n_parts}
    layout = scatter.raw_layout("google-2011", {"source": "download", "download": download}, None)
    scatter.download_checksums(download=download, folder=str(folder), out=str(tmp_path / "sums.json"))
    markers = []
    for name in layout.files:
        markers.append(str(tmp_path / "markers" / f"{name}.json"))
        scatter.download_file(kind="google-2011", download=download, folder=str(folder), file=name, out=markers[-1])
    done = scatter.download_done(kind="google-2011", folder=str(folder), markers=markers, out=str(tmp_path / "done.json"))
    assert len(done["files"]) == 2 * n_parts
    for name in layout.files:
        assert (source / name).read_bytes() == (folder / name).read_bytes()
    # a part missing from SHA256SUM is refused
    (folder / "SHA256SUM").write_text("".join(
        line + "\n" for line in (folder / "SHA256SUM").read_text().splitlines() if layout.files[-1] not in line
    ))
    from stragglers.download import DownloadError

    with pytest.raises(DownloadError, match="no entry"):
        scatter.download_file(kind="google-2011", download=download, folder=str(folder), file=layout.files[-1],
                              out=str(tmp_path / "x.json"))
    from test_scatter import run_scattered

    config = {"n_shards": 2, "min_tasks": 100}
    (folder / "SHA256SUM").unlink()
    scattered, _, _ = run_scattered("google-2011", folder, tmp_path / "work", config, parts_per_job=1)
    single = tmp_path / "single"
    # downloads do not fetch machine_events (README, machine state): the reference neither
    reference = tmp_path / "reference"
    shutil.copytree(source, reference, ignore=shutil.ignore_patterns("machine_events"))
    convert_google(reference, single, dataset="d", n_shards=2)
    manifest = pd.read_parquet(single / "manifest.parquet")
    assert len(manifest) > 0
    pd.testing.assert_frame_equal(manifest, pd.read_parquet(scattered / "manifest.parquet"))
    for path in manifest["path"]:
        pd.testing.assert_frame_equal(pd.read_parquet(single / path), pd.read_parquet(scattered / path))


def test_alibaba_archive_is_one_download_job(served_trace, tmp_path):
    """An Alibaba archive is one file (one `download_file` job) verified against the config's
    sha256; a wrong digest fails the job and the file is not kept under its name."""
    from stragglers import scatter

    source, url = served_trace
    archive = source / "batch_instance.tar.gz"
    archive.write_bytes(b"not really a tarball, only bytes to fetch" * 100)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    layout = scatter.raw_layout("alibaba-2018", {"source": "download"}, None)
    assert layout.files == ["batch_instance.tar.gz"] and layout.groups == [["batch_instance.tar.gz"]]
    folder = tmp_path / "download"
    result = scatter.download_file(kind="alibaba-2018", download={"url": f"{url}/batch_instance.tar.gz", "sha256": digest},
                                   folder=str(folder), file=layout.files[0], out=str(tmp_path / "ok.json"))
    assert (folder / "batch_instance.tar.gz").read_bytes() == archive.read_bytes()
    assert result["bytes"] == archive.stat().st_size
    other = tmp_path / "other"
    from stragglers.download import ChecksumMismatchError

    with pytest.raises(ChecksumMismatchError):
        scatter.download_file(kind="alibaba-2018", download={"url": f"{url}/batch_instance.tar.gz", "sha256": "0" * 64},
                              folder=str(other), file=layout.files[0], out=str(tmp_path / "bad.json"))
    assert not (other / "batch_instance.tar.gz").exists() and not (tmp_path / "bad.json").exists()
