"""Bad stored data: a missing, truncated or foreign converted job file stops the prediction with
an error that names the file and the command that rebuilds it, and leaves no output behind."""

import shutil
from pathlib import Path

import pandas as pd
import pytest

from stragglers.convert.one_process import convert_google
from stragglers.formats.jobs import ConvertedFileError, iter_shard_jobs, read_manifest
from stragglers.rules import predict as predict_rules
from stragglers.traces.generate import GoogleGeneratorConfig, generate_google


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    work = tmp_path_factory.mktemp("converted-files")
    generate_google(work / "raw", GoogleGeneratorConfig.from_dict({"n_jobs": 3, "seed": 5}))
    convert_google(work / "raw", work / "converted", dataset="t", n_shards=1)
    return work / "converted"


@pytest.fixture
def converted(pristine, tmp_path):
    copy = tmp_path / "converted"
    shutil.copytree(pristine, copy)
    return copy


def second_job_file(converted: Path) -> Path:
    manifest = read_manifest(converted).sort_values("job_id")
    return converted / manifest["path"].iloc[1]


def predict(converted: Path, out: Path):
    return predict_rules.predict(
        manifest=converted / "manifest.parquet",
        shard_jobs=[],
        tuned=[],
        tasks=out / "shard-0.tasks.parquet",
        jobs=out / "shard-0.jobs.parquet",
        dataset="t",
        method="Elapsed",
        shard="0",
        kind="google-2011",
        method_name="Elapsed",
        method_params={},
        replay={},
        seed=1,
    )


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def replace_with_foreign_parquet(path: Path) -> None:
    pd.DataFrame({"machine_id": [1, 2], "cpu": [0.5, 0.25]}).to_parquet(path, index=False)


@pytest.mark.parametrize(
    ("damage", "what"),
    [
        (Path.unlink, "converted job file missing"),
        (truncate, "not a readable Parquet file"),
        (replace_with_foreign_parquet, "not a converted job file of this dataset"),
    ],
    ids=["missing", "truncated", "foreign"],
)
def test_bad_job_file_is_named_with_the_rebuild_command(converted, tmp_path, damage, what):
    bad = second_job_file(converted)
    damage(bad)
    out = tmp_path / "predictions"
    with pytest.raises(ConvertedFileError) as caught:
        predict(converted, out)
    message = str(caught.value)
    assert message.startswith(f"{bad}: {what}")
    assert "snakemake --cores 2 --forcerun convert_manifest gather_shard" in message
    assert f"{converted / 'manifest.parquet'}" in message
    # nothing complete-looking is left: neither output nor a staging file
    assert not out.exists() or list(out.iterdir()) == []


def test_a_good_dataset_reads_every_job(converted, tmp_path):
    """The control: the same dataset undamaged predicts every job."""
    jobs = predict(converted, tmp_path / "predictions")
    assert len(jobs) == len(read_manifest(converted)) == 3
    assert (jobs["status"] == "ok").all()


def test_a_corrupt_manifest_is_named(converted):
    truncate(converted / "manifest.parquet")
    with pytest.raises(ConvertedFileError, match=r"manifest\.parquet: cannot be read"):
        list(iter_shard_jobs(converted, "google-2011", 0))
