"""The predictability measure (stragglers/replay/predictability.py): checked against cases whose
answer is known without the measure (perfect and useless features, a hand-made summary), and
on generated traces whose features are known to carry more signal."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from stragglers.convert.one_process import convert_google
from stragglers.formats.datasets import KIND_METADATA_KEY, converted_kind
from stragglers.replay.predictability import (
    cross_validated_predictability,
    dataset_predictability,
    main,
    summarise,
)
from stragglers.traces.generate import GoogleGeneratorConfig, generate_google

REPLAY = {"checkpoint_interval": 300.0}


def test_features_equal_to_latency_predict_it_perfectly_and_noise_does_not():
    rng = np.random.default_rng(0)
    latency = rng.lognormal(size=400)
    stragglers = latency >= np.quantile(latency, 0.9)
    rho, auc = cross_validated_predictability(latency[:, None], latency, stragglers, seed=1)
    assert rho > 0.97 and auc > 0.97
    noise = rng.normal(size=(400, 3))
    rho, auc = cross_validated_predictability(noise, latency, stragglers, seed=1)
    assert abs(rho) < 0.2 and abs(auc - 0.5) < 0.15


def test_no_straggler_class_gives_nan_auc_not_an_error():
    latency = np.arange(50.0)
    rho, auc = cross_validated_predictability(latency[:, None], latency, latency > 100, seed=1)
    assert np.isnan(auc) and rho > 0.9


def test_summary_by_hand():
    per_job = pd.DataFrame(
        {
            "job_id": ["a", "b", "c"],
            "spearman": [0.2, 0.5, 0.8],
            "auc": [0.6, np.nan, 0.8],
            "tail": [1.1, 3.0, 1.3],
        }
    )
    # spearman: (0.2 + 0.5 + 0.8) / 3; auc over the 2 jobs with both classes; tail: median
    assert summarise(per_job) == pytest.approx(
        {"n_jobs": 3, "spearman": 0.5, "auc": 0.7, "tail": 1.3, "auc_jobs": 2}
    )
    with pytest.raises(ValueError, match="no job"):
        summarise(per_job.iloc[:0])


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Two 6-job Google traces, same seed, features without and with the mechanisms' signature."""
    out = {}
    for strength in (0.0, 3.0):
        work = tmp_path_factory.mktemp(f"strength{strength}")
        settings = {"n_jobs": 6, "seed": 11, "signature_strength": strength}
        generate_google(work / "raw", GoogleGeneratorConfig.from_dict(settings))
        convert_google(work / "raw", work / "converted", dataset="t", n_shards=1)
        out[strength] = work / "converted"
    return out


def test_predictability_rises_with_signature_strength(traces):
    _, blind = dataset_predictability(traces[0.0], "google-2011", REPLAY, seed=3)
    _, strong = dataset_predictability(traces[3.0], "google-2011", REPLAY, seed=3)
    assert blind["n_jobs"] == strong["n_jobs"] == 6
    assert strong["spearman"] > blind["spearman"] + 0.1
    assert strong["auc"] > blind["auc"] + 0.05


def test_same_seed_same_numbers_and_the_command_line_writes_them(traces, tmp_path, capsys):
    per_job, summary = dataset_predictability(traces[3.0], "google-2011", REPLAY, seed=3)
    out_json, out_csv = tmp_path / "p.json", tmp_path / "p.csv"
    # no --kind: the conversion recorded it in the manifest
    argv = [str(traces[3.0]), "--seed", "3"]
    assert main([*argv, "--out-json", str(out_json), "--out-csv", str(out_csv)]) == 0
    assert json.loads(out_json.read_text()) == summary
    assert json.loads(capsys.readouterr().out)["spearman"] == summary["spearman"]
    written = pd.read_csv(out_csv, dtype={"job_id": str})
    np.testing.assert_allclose(written["spearman"], per_job["spearman"], rtol=1e-5)


def test_the_kind_is_read_from_the_manifest_and_its_absence_named(traces, tmp_path, capsys):
    assert converted_kind(traces[0.0]) == "google-2011"
    # a manifest written before conversions recorded their kind: --kind is asked for
    table = pq.read_table(traces[0.0] / "manifest.parquet")
    old = {k: v for k, v in table.schema.metadata.items() if k != KIND_METADATA_KEY}
    pq.write_table(table.replace_schema_metadata(old), tmp_path / "manifest.parquet")
    with pytest.raises(SystemExit):
        main([str(tmp_path)])
    assert "no dataset kind in its metadata" in capsys.readouterr().err


def test_a_folder_without_manifest_is_named(tmp_path):
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--kind", "google-2011"])
