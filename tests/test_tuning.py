"""The paper's tuning protocol: grids tried on a few tuning jobs that are then left out."""

import json
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from workflow_runs import ROOT

from stragglers.convert.one_process import convert_google
from stragglers.formats.jobs import read_manifest, tuning_job_ids
from stragglers.replay.tuning import parameter_grid
from stragglers.rules.predict import predict, tune_method
from stragglers.traces.generate import GoogleGeneratorConfig, generate_google


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    work = tmp_path_factory.mktemp("tuning")
    generate_google(work / "raw", GoogleGeneratorConfig.from_dict({"n_jobs": 5, "seed": 3}))
    convert_google(work / "raw", work / "converted", dataset="t", n_shards=1)
    return work / "converted"


def test_parameter_grid_is_the_product_in_config_order():
    assert parameter_grid({"a": [1, 2], "b": ["x"]}) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
    with pytest.raises(ValueError, match="tuning.grids: a"):
        parameter_grid({"a": []})


def test_tune_then_predict_without_the_tuning_jobs(converted, tmp_path):
    result = tune_method(
        manifest=converted / "manifest.parquet",
        converted_jobs=[],
        tuning=tmp_path / "GBTR.json",
        dataset="t",
        method="GBTR",
        kind="google-2011",
        method_name="GBTR",
        method_params={},
        grid={"n_estimators": [5, 40]},
        replay={},
        seed=1,
        n_jobs=2,
    )
    manifest = read_manifest(converted)
    tuning = tuning_job_ids(manifest, 2)
    assert result["tuning_jobs"] == tuning == sorted(manifest["job_id"])[:2]
    assert [g["params"] for g in result["grid"]] == [{"n_estimators": 5}, {"n_estimators": 40}]
    best = max(result["grid"], key=lambda g: g["mean_F1"])
    assert result["best_params"] == best["params"]
    assert json.loads((tmp_path / "GBTR.json").read_text()) == result

    jobs = predict(
        manifest=converted / "manifest.parquet",
        shard_jobs=[],
        tuned=str(tmp_path / "GBTR.json"),
        tasks=tmp_path / "t.parquet",
        jobs=tmp_path / "j.parquet",
        dataset="t",
        method="GBTR",
        shard="0",
        kind="google-2011",
        method_name="GBTR",
        method_params={},
        replay={},
        seed=1,
        tuning_jobs=2,
    )
    assert set(jobs["job_id"]) == set(manifest["job_id"]) - set(tuning)
    assert set(pd.read_parquet(tmp_path / "t.parquet")["job_id"]).isdisjoint(tuning)


def test_workflow_runs_tuning_first_when_applied(tmp_path):
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["methods"] = {"NURD": {}, "GBTR": {}}
    config["tuning"] = {"n_jobs": 6, "apply": True, "grids": {"NURD": {"alpha": [0.3, 0.5]}}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    dry = subprocess.run(
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
            str(tmp_path / "config.yaml"),
            "--replace-workflow-config",
            "--quiet",
            "rules",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "tune_method" in dry.stdout
    lines = [
        line.split() for line in dry.stdout.splitlines() if line.strip().startswith("tune_method")
    ]
    # NURD on every dataset of the default config; GBTR has no grid
    assert lines and lines[0][-1] == str(len(config["datasets"]))
