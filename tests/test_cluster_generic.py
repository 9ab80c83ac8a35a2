"""The workflow through Snakemake's cluster-generic executor: every job is submitted by
workflow/profiles/local-processes/submit.py as its own detached local process (a fresh Python
and Snakemake, nothing shared in memory with the scheduler), polled by status.py. Outputs must
equal the session's local run of the same config (tests/workflow_runs.py), wall-time columns
aside.

The config (tests/configs/tiny/config.yaml) exercises every rule type of the default run (the
test compares the submitted rules with `snakemake --list-rules`): generation, per-file
downloads from a local HTTP server, a verified local folder, the scattered conversion, tuning,
prediction, evaluation, tables, the completion-time and mitigation-policy simulations and the
results index.
"""

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from workflow_runs import ROOT

PROFILE = ROOT / "workflow" / "profiles" / "local-processes"

pytestmark = pytest.mark.e2e

# Columns measured by the clock, not computed from the data (the same rule as the determinism
# checks: compare everything else).
WALL_TIME_COLUMNS = ("seconds", "rule_seconds", "max_rss", "s", "cpu_time")


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
# fingerprint (docs/fingerprint.md), whose replay reads the files the audit reads (the default
# config's run includes it, `paper_fingerprint`; the tiny config leaves it out), and the
# generator's calibration with its check (docs/calibration.md; tests/test_calibrate_run.py)
NOT_IN_DEFAULT_RUN = {
    "calibration_propose",
    "calibration_trial",
    "calibration_tell",
    "calibration_tables",
    "calibration_check",
    "calibration_check_table",
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


def test_workflow_through_cluster_generic_equals_local_run(
    tmp_path, tiny_config, run_snakemake, reference_run
):
    cluster, state = tmp_path / "cluster", tmp_path / "submitted"
    # in the working directory, as the reference run's: the findings quote its relative path
    config = tiny_config(cluster / "config.yaml")
    # the cluster run first: the session's local run goes side by side with it (another
    # worker's test starts it) while this one mostly waits for submitted processes and polls
    run = run_snakemake(cluster, config, *cluster_generic_args(state, jobs=3))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]
    reference = reference_run()
    reference.check()
    local = reference.workdir

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
