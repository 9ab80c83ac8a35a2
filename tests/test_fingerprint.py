"""The Table 3 fingerprint: the table builder on hand-made frames, the paper-protocol replay on
a few generated jobs, and the `fingerprint` target's DAG (docs/fingerprint.md)."""

import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from workflow_runs import ROOT, load_config, snakemake_command, write_config

from stragglers.evaluate.fingerprint import SETS
from stragglers.report.evaluation import paper_rows_for
from stragglers.report.fingerprint import (
    COLUMNS,
    fingerprint_distances,
    fingerprint_markdown,
    fingerprint_rows,
)
from stragglers.rules.fingerprint import (
    fingerprint_methods,
    fingerprint_paper_table,
    fingerprint_replay,
    fingerprint_table,
    fingerprint_target,
    protocol_label,
)

PAPER = str(ROOT / "stragglers" / "data" / "paper_table3.csv")


def paper_frame():
    return pd.DataFrame(
        [
            # dataset, method, TPR, FPR, F1
            ("g", "GBTR", 0.5, 0.0, 0.6),
            ("g", "HBOS", 1.0, 0.7, 0.2),
            ("g", "ABOD", 0.9, 0.5, 0.3),
            ("g", "NURD", 0.9, 0.1, 0.8),
            ("a", "GBTR", 0.2, 0.0, 0.3),
        ],
        columns=["dataset", "method", "TPR", "FPR", "F1"],
    )


def ours_frame():
    return pd.DataFrame(
        {
            "dataset": ["g", "g", "g", "g", "a", "g"],
            "method": ["nurd", "HBOS", "GBTR", "ABOD", "GBTR", "Oracle"],
            "TPR": [0.6, 0.9, 0.3, 0.8, 0.2, 1.0],
            "FPR": [0.3, 0.9, 0.1, np.nan, 0.2, 0.0],
            "F1": [0.4, 0.2, 0.3, 0.3, 0.3, 1.0],
            "TPR_lo": [0.5, 0.8, 0.2, 0.7, 0.1, 1.0],
            "TPR_hi": [0.7, 1.0, 0.4, 0.9, 0.3, 1.0],
            "note": ["x"] * 6,
        }
    )


def test_rows_follow_the_sets_and_keep_only_methods_with_a_paper_row():
    rows = fingerprint_rows(ours_frame(), paper_frame(), {"g": "causal", "a": "paper"})
    assert list(rows.columns) == COLUMNS
    assert rows[["dataset", "set", "method"]].values.tolist() == [
        ["g", "calibration", "GBTR"],
        ["g", "calibration", "HBOS"],
        ["g", "validation", "ABOD"],
        ["g", "held-out", "NURD"],
        ["a", "calibration", "GBTR"],
    ]
    assert rows["protocol"].tolist() == ["causal"] * 4 + ["paper"]
    nurd = rows[rows["method"] == "NURD"].iloc[0]  # matched ignoring case, as Table 3 matches
    assert (nurd["TPR"], nurd["paper_TPR"], nurd["TPR_lo"]) == (0.6, 0.9, 0.5)
    assert rows["F1_lo"].isna().all()  # intervals the input lacks stay empty


def test_a_method_with_a_paper_row_that_we_did_not_run_stays_with_no_score():
    ours = ours_frame()
    rows = fingerprint_rows(ours[ours["method"] != "HBOS"], paper_frame(), {"g": "causal"})
    hbos = rows[rows["method"] == "HBOS"].iloc[0]
    assert np.isnan(hbos["TPR"]) and hbos["paper_TPR"] == 1.0


def test_distance_per_set_counts_the_rows_it_averages():
    rows = fingerprint_rows(ours_frame(), paper_frame(), {"g": "causal", "a": "causal"})
    distances = fingerprint_distances(rows).set_index(["dataset", "set"])
    # GBTR |0.3-0.5| + |0.1-0| = 0.3; HBOS |0.9-1| + |0.9-0.7| = 0.3
    assert distances.loc[("g", "calibration"), "distance"] == pytest.approx(0.3)
    assert distances.loc[("g", "calibration"), ["rows", "of"]].tolist() == [2, 2]
    # ABOD has no FPR of ours: no distance, and the count says so
    assert np.isnan(distances.loc[("g", "validation"), "distance"])
    assert distances.loc[("g", "validation"), ["rows", "of"]].tolist() == [0, 1]
    assert distances.loc[("g", "held-out"), "distance"] == pytest.approx(0.3 + 0.2)
    assert distances.loc[("a", "calibration"), "distance"] == pytest.approx(0.2)
    assert ("a", "validation") not in distances.index  # no paper row there


def test_markdown_gives_the_distances_then_the_rows_with_intervals():
    rows = fingerprint_rows(ours_frame(), paper_frame(), {"g": "causal"})
    text = fingerprint_markdown(rows, "T")
    assert text.startswith("# T\n")
    assert "| g | causal | calibration | 0.300 | 2 | 2 |" in text
    assert "## g (protocol `causal`)" in text
    assert "0.60 [0.50, 0.70]" in text  # NURD's TPR with its interval
    assert "|dTPR|+|dFPR|" in text
    assert "no fingerprint" in fingerprint_markdown(rows.iloc[:0], "T")


def test_duplicate_rows_and_missing_columns_are_named():
    ours = pd.concat([ours_frame(), ours_frame().iloc[:1]], ignore_index=True)
    with pytest.raises(
        ValueError, match=r"our table has more than one row for \[\['g', 'nurd'\]\]"
    ):
        fingerprint_rows(ours, paper_frame(), {"g": "causal"})
    with pytest.raises(ValueError, match=r"paper table lacks columns \['FPR'\]"):
        fingerprint_rows(ours_frame(), paper_frame().drop(columns="FPR"), {"g": "causal"})


def test_paper_numbers_are_table3s_and_only_mapped_kinds_count():
    kinds = {"gs": "google-2011", "as": "alibaba-2018", "old": "alibaba-2017"}
    methods = fingerprint_methods(PAPER, kinds)
    everyone = [m for members in SETS.values() for m in members]
    assert methods == {"gs": everyone, "as": everyone}  # 21 baselines, NURD, NURD-NC
    ours = pd.DataFrame({"dataset": ["gs"], "method": ["GBTR"], "TPR": [0.1], "FPR": [0.1]})
    ours["F1"] = 0.1
    rows = fingerprint_rows(ours, paper_rows_for(PAPER, kinds), {"gs": "causal", "as": "causal"})
    paper = pd.read_csv(PAPER)
    expected = paper.assign(dataset=paper["dataset"].map({"google": "gs", "alibaba": "as"}))
    joined = rows.merge(expected, on=["dataset", "method"], suffixes=("", "_published"))
    assert len(joined) == len(rows) == 46
    for metric in ("TPR", "FPR", "F1"):
        assert (joined[f"paper_{metric}"] == joined[f"{metric}_published"]).all()


def test_the_target_says_why_when_no_dataset_has_a_paper_row():
    assert fingerprint_methods(PAPER, {"old": "alibaba-2017"}) == {}
    with pytest.raises(ValueError, match="no dataset of this config has a counterpart"):
        fingerprint_target({}, ["results/fingerprint/fingerprint.csv"])


def test_protocol_label_names_overrides():
    assert protocol_label({"protocol": "paper"}) == "paper"
    assert protocol_label({}) == "causal"
    assert protocol_label({"protocol": "paper", "overrides": {"scaling": "visible"}}) == (
        "paper (scaling=visible)"
    )


def test_run_fingerprint_reads_table3(tmp_path):
    table3 = ours_frame().assign(dataset=lambda f: f["dataset"].map({"g": "gs", "a": "as"}))
    table3.to_csv(tmp_path / "table3.csv", index=False)
    rows = fingerprint_table(
        table3=str(tmp_path / "table3.csv"),
        paper=PAPER,
        kinds={"gs": "google-2011", "as": "alibaba-2018"},
        protocols={"gs": "causal", "as": "causal"},
        bootstrap={"confidence_level": 0.9},
        csv=str(tmp_path / "fingerprint.csv"),
        md=str(tmp_path / "fingerprint.md"),
        distances=str(tmp_path / "distances.csv"),
    )
    distances = pd.read_csv(tmp_path / "distances.csv").set_index(["dataset", "set"])
    assert distances.loc[("gs", "calibration"), ["rows", "of"]].tolist() == [2, 11]
    assert distances.loc[("as", "calibration"), "distance"] == pytest.approx(
        (0.2 - 0.16) + (0.2 - 0.01)
    )
    written = pd.read_csv(tmp_path / "fingerprint.csv")
    assert list(written.columns) == COLUMNS and len(written) == len(rows) == 46
    gbtr = written[(written["dataset"] == "gs") & (written["method"] == "GBTR")].iloc[0]
    assert (gbtr["TPR"], gbtr["paper_TPR"], gbtr["paper_F1"]) == (0.3, 0.46, 0.57)
    assert "90 % bootstrap interval" in (tmp_path / "fingerprint.md").read_text()


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    from stragglers.convert.one_process import convert_google
    from stragglers.traces.generate import GoogleGeneratorConfig, generate_google

    work = tmp_path_factory.mktemp("fingerprint")
    generate_google(work / "raw", GoogleGeneratorConfig.from_dict({"n_jobs": 4, "seed": 5}))
    convert_google(work / "raw", work / "converted", dataset="gs", n_shards=1)
    return work / "converted"


def test_paper_replay_then_table(converted, tmp_path):
    files = []
    for method, params in (("GBTR", {"n_estimators": 10}), ("HBOS", {})):
        files.append(str(tmp_path / f"{method}.csv"))
        metrics = fingerprint_replay(
            manifest=str(converted / "manifest.parquet"),
            converted_jobs=[],
            job_metrics=files[-1],
            dataset="gs",
            fingerprint_method=method,
            kind="google-2011",
            method_params=params,
            replay={"protocol": "causal", "overrides": {"prune_scored": False}},
            seed=1,
            tuning_jobs=1,
        )
        assert len(metrics) == 3  # 4 jobs, one kept for tuning
    rows = fingerprint_paper_table(
        job_metrics=files,
        datasets=["gs"],
        kinds={"gs": "google-2011"},
        paper=PAPER,
        seed=1,
        bootstrap={"bootstrap_resamples": 50},
        csv=str(tmp_path / "fingerprint.csv"),
        md=str(tmp_path / "fingerprint.md"),
        distances=str(tmp_path / "distances.csv"),
        real_distances=str(tmp_path / "real.csv"),
        real_per_job=str(tmp_path / "real_per_job.csv"),
    )
    assert pd.read_csv(tmp_path / "real.csv").empty  # no real dataset: nothing to compare
    assert pd.read_csv(tmp_path / "real_per_job.csv").empty
    assert set(rows["protocol"]) == {"paper"} and len(rows) == 23
    scored = rows[rows["TPR"].notna()]
    assert scored["method"].tolist() == ["GBTR", "HBOS"]
    per_job = pd.concat([pd.read_csv(f) for f in files])
    means = per_job[per_job["status"] == "ok"].groupby("method")["TPR"].mean()
    assert scored["TPR"].tolist() == pytest.approx(means[["GBTR", "HBOS"]].tolist())
    assert (scored["TPR_lo"] <= scored["TPR"]).all() and (scored["TPR"] <= scored["TPR_hi"]).all()


def test_distance_to_the_real_jobs_and_with_each_real_job_left_out():
    from stragglers.report.fingerprint import real_job_breakdown, real_job_distances

    def summary_of(metrics):
        return metrics.groupby(["dataset", "method"], as_index=False)[["TPR", "FPR", "F1"]].mean()

    rows = [  # dataset, job, method, TPR, FPR
        ("gen", "g1", "GBTR", 0.5, 0.1),
        ("gen", "g1", "HBOS", 1.0, 1.0),
        ("real", "r1", "GBTR", 0.4, 0.0),
        ("real", "r2", "GBTR", 0.6, 0.2),
        ("real", "r1", "HBOS", 0.9, 0.5),
        ("real", "r2", "HBOS", 0.7, 0.5),
    ]
    metrics = pd.DataFrame(rows, columns=["dataset", "job_id", "method", "TPR", "FPR"])
    metrics["F1"] = 0.5
    per_job = real_job_breakdown(summary_of, metrics, [("gen", "real")], ["real", "gen"])
    real = real_job_distances(summary_of, metrics, [("gen", "real")], ["real", "gen"], per_job)
    calibration = real[real["set"] == "calibration"].iloc[0]
    # by hand: GBTR 0 (the real means are 0.5 / 0.1), HBOS |1 - 0.8| + |1 - 0.5| = 0.7;
    # without r1 (GBTR 0.2, HBOS 0.8) 0.5, without r2 (GBTR 0.2, HBOS 0.6) 0.4
    assert calibration["reference"] == "real" and calibration["rows"] == 2
    assert calibration["distance"] == pytest.approx(0.35)
    assert calibration["loo_min"] == pytest.approx(0.4)
    assert calibration["loo_max"] == pytest.approx(0.5)
    assert real["set"].tolist() == ["calibration"]  # the sets with a real row
    per_job = per_job.set_index("job_id")
    # r1 alone: GBTR |0.5 - 0.4| + |0.1 - 0| = 0.2, HBOS 0.1 + 0.5 = 0.6; r2 alone: 0.2, 0.8
    assert per_job.loc["r1", "alone"] == pytest.approx(0.4)
    assert per_job.loc["r2", "alone"] == pytest.approx(0.5)
    # leaving r1 out is r2 alone, and the extremes are real_job_distances' spread
    assert per_job.loc["r1", "left_out"] == pytest.approx(per_job.loc["r2", "alone"])
    assert per_job["left_out"].min() == pytest.approx(calibration["loo_min"])
    assert per_job["left_out"].max() == pytest.approx(calibration["loo_max"])
    # r1 against r2: GBTR 0.2 + 0.2, HBOS 0.2 + 0 -> 0.3, the same both ways
    assert per_job["job_to_rest"].tolist() == pytest.approx([0.3, 0.3])


def dry_run(folder: Path, *targets: str, **changes) -> dict[str, int]:
    """Jobs per rule of `snakemake -n` on tests/configs/generated (run in `folder`), with
    `changes` over its top-level settings."""
    config = write_config({**load_config("generated"), **changes}, folder / "config.yaml")
    run = subprocess.run(
        snakemake_command(folder, config, "-n", *targets, "--quiet", "rules"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    rows = [line.split() for line in run.stdout.splitlines()]
    return {row[0]: int(row[1]) for row in rows if len(row) == 2 and row[1].isdigit()}


def test_fingerprint_target_dag(tmp_path):
    """Every method with a paper row, once per dataset, whatever the config's methods; the
    default target writes the run's own fingerprint and replays nothing more."""
    counts = dry_run(tmp_path, "fingerprint")
    assert counts["fingerprint_replay"] == 23
    assert counts["fingerprint_paper_table"] == counts["fingerprint"] == 1
    assert "predict" not in counts
    counts = dry_run(tmp_path)
    assert counts["fingerprint_table"] == 1 and "fingerprint_replay" not in counts


def test_paper_fingerprint_puts_the_held_out_test_in_the_default_run(tmp_path):
    """`paper_fingerprint: true` (the default config's): the default target replays every
    method with a paper row under `protocol: paper`, and the findings wait for it."""
    counts = dry_run(tmp_path, paper_fingerprint=True)
    assert counts["fingerprint_replay"] == 23
    assert counts["fingerprint_paper_table"] == counts["findings"] == 1
