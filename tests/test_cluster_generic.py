"""The workflow through Snakemake's cluster-generic executor: every job is submitted by
workflow/profiles/local-processes/submit.py as its own detached local process (a fresh Python
and Snakemake, nothing shared in memory with the scheduler), polled by status.py. Outputs must
equal a local run's on the same config, wall-time columns aside.

The config exercises every rule type of the default run (the test compares the submitted rules
with `snakemake --list-rules`): generation, per-file downloads from a local HTTP server, a
verified local folder, the scattered conversion, tuning, prediction, evaluation, tables, the
completion-time and mitigation-policy simulations and the results index.
"""

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from served_bucket import served_folder, write_google_bucket

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "workflow" / "profiles" / "local-processes"

pytestmark = pytest.mark.e2e

# Columns measured by the clock, not computed from the data (the same rule as the determinism
# checks: compare everything else).
WALL_TIME_COLUMNS = ("seconds", "rule_seconds", "max_rss", "s", "cpu_time")


@pytest.fixture
def served_trace(tmp_path):
    """Generated Google parts with a SHA256SUM, served on 127.0.0.1 and usable as a local folder."""
    source = write_google_bucket(tmp_path / "bucket")
    with served_folder(source) as url:
        yield source, url


def write_config(path: Path, source: Path, url: str) -> Path:
    n_parts = len(list((source / "task_events").glob("part-*")))
    google = {
        "kind": "google-2011",
        "min_tasks": 100,
        "replay": {"grid_origin": 600, "checkpoint_interval": 300},
    }
    config = {
        "seed": 7,
        "datasets": {
            "generated": {
                **google,
                "source": "generate",
                "generator": {"n_jobs": 4},
                "n_shards": 1,
            },
            "local": {
                **google,
                "source": "local",
                "raw_dir": str(source),
                "sha256sum": str(source / "SHA256SUM"),
                "n_shards": 1,
            },
            "downloaded": {
                **google,
                "source": "download",
                "n_shards": 1,
                "download": {
                    "parts": f"0-{n_parts - 1}",
                    "base_url": url,
                    "parts_per_table": n_parts,
                },
            },
        },
        "replay": {"start_fraction": 0.04, "straggler_quantile": 0.9, "protocol": "causal"},
        "methods": {"NURD": {"n_estimators": 10}},
        "tuning": {"n_jobs": 1, "apply": True, "grids": {"NURD": {"alpha": [0.3, 0.5]}}},
        "evaluation": {"f1_time_points": 5},
        "simulation": {"repeats": 2, "machines": [100, 300]},
        "launch": {"methods": {"MTL-f0": {}}, "min_train_tasks": 20, "train_shares": [0.5]},
    }
    path.write_text(yaml.safe_dump(config))
    return path


def cluster_generic_args(state_dir: Path, jobs: int) -> list[str]:
    """The command-line form of workflow/profiles/local-processes/config.yaml, with absolute
    script paths (a test runs from a scratch working directory)."""
    python = sys.executable
    return [
        "--executor",
        "cluster-generic",
        "--cluster-generic-submit-cmd",
        f"{python} {PROFILE / 'submit.py'} {state_dir}",
        "--cluster-generic-status-cmd",
        f"{python} {PROFILE / 'status.py'} {state_dir}",
        "--cluster-generic-cancel-cmd",
        f"{python} {PROFILE / 'cancel.py'} {state_dir}",
        "--jobs",
        str(jobs),
        "--latency-wait",
        "5",
        "--max-status-checks-per-second",
        "4",
        "--seconds-between-status-checks",
        "1",
    ]


def snakemake_command(workdir: Path, config: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(config),
        "--replace-workflow-config",
        *args,
    ]


def run_snakemake(workdir: Path, config: Path, *args: str) -> None:
    command = snakemake_command(workdir, config, *args)
    run = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]


# rules with inputs only: Snakemake runs them in the scheduler, never submits them
TARGET_ONLY_RULES = {
    "all",
    "tuning",
    "audit",
    "sensitivity",
    "replicates",
    "fingerprint",
    "calibrate",
}
# the reproduction audit is its own target (README), not part of the default run tested here;
# its rules read the same converted files through the same input functions as predict;
# download_trace is the download-only target (resources/download/<dataset>.done.json), which
# conversion does not need: it reads the per-file download markers
# the sensitivity map and the replicates (docs/sensitivity.md) are targets of their own too:
# their traces are ordinary datasets run by the rules tested here; so is the `paper`
# fingerprint (docs/fingerprint.md), whose replay reads the files the audit reads, and the
# generator's calibration (docs/calibration.md; tests/test_calibrate_run.py)
NOT_IN_DEFAULT_RUN = {
    "calibration_propose",
    "calibration_trial",
    "calibration_tell",
    "calibration_tables",
    "audit_variant",
    "audit_table",
    "fingerprint_replay",
    "fingerprint_paper_table",
    "download_trace",
    "predictability",
    "sensitivity_paper",
    "sensitivity_table",
    "replicate_table",
}


def workflow_rules(config: Path) -> set[str]:
    listed = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--snakefile",
            str(ROOT / "Snakefile"),
            "--configfile",
            str(config),
            "--replace-workflow-config",
            "--list-rules",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=config.parent,
    )
    return {line.strip() for line in listed.stdout.splitlines() if line.strip()}


def submitted_rules_of(job: Path) -> list[str]:
    """Rules of the jobs a submitted job script runs (`--target-jobs 'rule:wildcards' ...`):
    one, or several for a group job such as `predict`."""
    for line in (job / "jobscript.sh").read_text().splitlines():
        if "--target-jobs" in line:
            words = shlex.split(line[line.index("--target-jobs") :])[1:]
            end = next((i for i, word in enumerate(words) if word.startswith("--")), len(words))
            return [word.split(":", 1)[0] for word in words[:end]]
    raise AssertionError(f"{job}: no --target-jobs in the job script")


def comparable(path: Path) -> pd.DataFrame | str | bytes:
    if path.suffix == ".parquet":
        frame = pd.read_parquet(path)
    elif path.suffix == ".csv":
        frame = pd.read_csv(path)
    elif path.suffix == ".json":
        record = json.loads(path.read_text())
        record.pop("seconds", None)  # the conversion's own timings
        return record
    elif path.suffix == ".md":
        return path.read_text()
    else:
        return path.read_bytes()
    return frame.drop(columns=[c for c in frame.columns if c in WALL_TIME_COLUMNS])


def test_workflow_through_cluster_generic_equals_local_run(tmp_path, served_trace):
    source, url = served_trace
    config = write_config(tmp_path / "config.yaml", source, url)
    local, cluster = tmp_path / "local", tmp_path / "cluster"
    state = tmp_path / "submitted"
    # the local run to compare with goes side by side with the cluster run, which mostly
    # waits for its submitted processes and status polls
    with (tmp_path / "local-run.log").open("w") as local_log:
        local_run = subprocess.Popen(
            snakemake_command(local, config, "--cores", "2"),
            stdout=subprocess.DEVNULL,
            stderr=local_log,
        )
        try:
            run_snakemake(cluster, config, *cluster_generic_args(state, jobs=3))
            local_returncode = local_run.wait(timeout=900)
        finally:
            if local_run.poll() is None:
                local_run.terminate()
                local_run.wait(timeout=60)
    assert local_returncode == 0, (tmp_path / "local-run.log").read_text()[-6000:]

    # every job ran in its own submitted process, and every rule type was among them
    submitted = sorted(state.iterdir())
    assert all((job / "exit_code").read_text().strip() == "0" for job in submitted)
    submitted_rules = {rule for job in submitted for rule in submitted_rules_of(job)}
    assert submitted_rules == workflow_rules(config) - TARGET_ONLY_RULES - NOT_IN_DEFAULT_RUN
    n_local_jobs = sum(1 for _ in (local / "logs").rglob("*.log"))
    assert len(submitted) == n_local_jobs  # one submitted process per job (one log per job)

    # same outputs as the local run
    outputs = sorted(p.relative_to(local) for p in (local / "results").rglob("*") if p.is_file())
    outputs += sorted(
        p.relative_to(local) for p in (local / "resources" / "converted").rglob("*") if p.is_file()
    )
    assert outputs and all((cluster / p).is_file() for p in outputs)
    cluster_outputs = sorted(
        p.relative_to(cluster) for p in (cluster / "results").rglob("*") if p.is_file()
    )
    assert cluster_outputs == sorted(p for p in outputs if p.parts[0] == "results")
    for relative in outputs:
        if relative.suffix == ".png" or relative.name.startswith("cost."):
            continue  # figures' bytes carry no data beyond the CSVs; cost tables are wall time
        expected, actual = comparable(local / relative), comparable(cluster / relative)
        if isinstance(expected, pd.DataFrame):
            pd.testing.assert_frame_equal(actual, expected, obj=str(relative))
        else:
            assert actual == expected, relative
    shutil.rmtree(state)
