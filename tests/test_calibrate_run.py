"""`snakemake calibrate` end to end on a tiny budget (2 rounds x 2 trials, 3 jobs, 2 cheap
methods; docs/calibration.md): the outputs agree with the trials' own numbers, the same config
gives the same trials on 1 core and on 2, and a search killed mid-round (SIGKILL to the whole
process group) and started again ends with the same trials as an uninterrupted one."""

import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from workflow_runs import ROOT, load_config, snakemake_command, write_config

DATASET = "google-tiny"  # as in tests/configs/generated
METHODS = ["GBTR", "PCA"]

pytestmark = pytest.mark.e2e


def tiny_config(folder: Path) -> Path:
    """tests/configs/generated, written into the run's folder."""
    return write_config(load_config("generated"), folder / "config.yaml")


def command(folder: Path, cores: int, *extra: str) -> list[str]:
    return snakemake_command(
        folder, tiny_config(folder), "--cores", str(cores), *extra, "calibrate"
    )


def run_calibrate(folder: Path, cores: int, *extra: str) -> None:
    run = subprocess.run(
        command(folder, cores, *extra), capture_output=True, text=True, timeout=900
    )
    assert run.returncode == 0, run.stderr[-6000:]


def trial_record(folder: Path) -> pd.DataFrame:
    """The trials that count (abandoned asks left out), keyed by round and trial, without the
    numbers that may differ between runs (seconds, storage numbering)."""
    trials = pd.read_csv(folder / "results" / "calibration" / "trials.csv")
    kept = trials[trials["abandoned"].isna()].drop(columns=["number", "seconds", "abandoned"])
    return kept.sort_values(["round", "trial"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("calibrate-1core")
    run_calibrate(folder, 1)
    return folder


def test_calibrate_writes_every_trial_and_the_best_settings(reference):
    out = reference / "results" / "calibration"
    trials = pd.read_csv(out / "trials.csv")
    assert list(zip(trials["round"], trials["trial"])) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert (trials["state"] == "COMPLETE").all()
    # the first trial is the dataset's own settings (the generator's default where unset)
    first = trials.iloc[0]
    assert (first["signature_strength"], first["feature_noise"]) == (1.5, 1.0)
    assert trials["signature_strength"].nunique() == 4  # every proposal its own
    # the distance is the fingerprint's: mean over the methods of |dTPR| + |dFPR|
    paper = pd.read_csv(ROOT / "stragglers" / "data" / "paper_table3.csv")
    paper = paper[paper["dataset"] == "google"].set_index("method")
    rows = []
    for method in METHODS:
        assert (trials[f"{method}_paper_TPR"] == paper.loc[method, "TPR"]).all()
        assert (trials[f"{method}_paper_FPR"] == paper.loc[method, "FPR"]).all()
        rows.append(
            (trials[f"{method}_TPR"] - paper.loc[method, "TPR"]).abs()
            + (trials[f"{method}_FPR"] - paper.loc[method, "FPR"]).abs()
        )
    np.testing.assert_allclose(trials["distance"], np.mean(rows, axis=0))
    assert trials["distance"].nunique() > 1  # the settings change what the methods see
    # the distance per round, and the best trial's settings ready to paste
    rounds = pd.read_csv(out / "rounds.csv")
    assert list(rounds["round"]) == [0, 1]
    assert rounds["best_so_far"].iloc[-1] == trials["distance"].min()
    assert "Round 0's first trial" in (out / "rounds.md").read_text()
    best = yaml.safe_load((out / "best_settings.yaml").read_text())[DATASET]
    winner = trials.loc[trials["distance"].idxmin()]
    assert best["distance"] == pytest.approx(winner["distance"])
    assert best["generator"] == {
        "n_jobs": 4,
        "signature_strength": pytest.approx(winner["signature_strength"]),
        "feature_noise": pytest.approx(winner["feature_noise"]),
    }
    methods = pd.read_csv(out / "methods.csv")
    assert set(methods["settings"]) == {"start", "best"}
    assert (out / "methods.png").stat().st_size > 1000
    # the closest each row came: its least over the trials, and the mean row
    floor = pd.read_csv(out / "row_floor.csv").set_index("method")
    assert list(floor.index) == [*METHODS, "mean"]
    for method, row in zip(METHODS, rows):
        assert floor.loc[method, "least"] == pytest.approx(row.min())
    assert floor.loc["mean", "least"] <= trials["distance"].min() + 1e-12
    assert floor.loc["mean", "at_best"] == pytest.approx(trials["distance"].min())
    assert (out / DATASET / "study.db").exists()


def test_two_cores_give_the_same_trials_as_one(reference, tmp_path):
    run_calibrate(tmp_path, 2)
    pd.testing.assert_frame_equal(trial_record(tmp_path), trial_record(reference))


def test_a_search_killed_mid_round_resumes_to_the_same_trials(reference, tmp_path):
    # kill -9 the whole run (Snakemake and its jobs) once round 1 is asked and one of its
    # trials is scored, the other not yet told
    process = subprocess.Popen(
        command(tmp_path, 1),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    mark = tmp_path / "results" / "calibration" / DATASET / "round-1" / "trial-0.json"
    deadline = time.monotonic() + 600
    while not mark.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mark.exists() and process.poll() is None, "the run ended before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    told = tmp_path / "results" / "calibration" / DATASET / "round-1" / "told.json"
    assert not told.exists()
    subprocess.run(command(tmp_path, 1, "--unlock"), check=True, capture_output=True)
    run_calibrate(tmp_path, 1, "--rerun-incomplete")
    pd.testing.assert_frame_equal(trial_record(tmp_path), trial_record(reference))
