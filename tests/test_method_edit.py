"""Editing a method's file reruns that method's jobs and what depends on them, nothing else:
the files that define a method (stragglers.methods.method_files) are inputs of its predict and
tune_method jobs (workflow/rules/predict.smk), so Snakemake's mtime trigger sees an edit.

The run uses a copy of the workflow (Snakefile, workflow/, scripts/, stragglers/), so that
editing a method file never disturbs the repository or another test's run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from workflow_runs import ROOT, load_config, write_config

TARGETS = ["results/alibaba-edit/evaluation/job_metrics.csv"]


def _copy_workflow(to: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("workflow", "scripts", "stragglers", "config"):
        shutil.copytree(ROOT / folder, to / folder, ignore=ignore)
    for name in ("Snakefile", "environment.yml"):
        shutil.copy2(ROOT / name, to / name)
    return to


def _snakemake(code: Path, workdir: Path, config: Path, *args: str) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(code / "Snakefile")]
        + ["--directory", str(workdir), "--configfile", str(config), "--replace-workflow-config"]
        + [*args, *TARGETS],
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "PYTHONPATH": str(code)},  # the jobs import the copied package
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout + run.stderr


def _planned(log: str) -> tuple[dict[str, int], set[str]]:
    """A dry run's job count per rule, and the methods whose predict jobs it would run."""
    counts = {}
    if "Job stats:" in log:
        table = log.split("Job stats:")[1].split("\n\n")[0]
        for rule, count in re.findall(r"^(\w+)\s+(\d+)$", table, flags=re.M):
            if rule != "total":
                counts[rule] = int(count)
    methods = set(re.findall(r"output: results/alibaba-edit/predictions/([^/]+)/shard-0", log))
    return counts, methods


def _edit(path: Path, work: Path) -> None:
    """An edit: new content (Snakemake compares a small input's checksum, not only its time)
    and a modification time after every output's."""
    path.write_text(path.read_text() + "\n# edited\n")
    later = max(p.stat().st_mtime_ns for p in work.rglob("*") if p.is_file()) + 10**9
    os.utime(path, ns=(later, later))


@pytest.mark.e2e  # three runs of a small config: ~1 min on 2 cores
def test_editing_a_method_file_reruns_that_methods_jobs_only(tmp_path):
    code = _copy_workflow(tmp_path / "code")
    work = tmp_path / "work"
    extra = tmp_path / "extra_methods"
    shutil.copytree(ROOT / "tests" / "extra_methods", extra)
    config = load_config("method-edit")
    config["method_dirs"] = [str(extra)]
    config = write_config(config, work / "config.yaml")
    _snakemake(code, work, config, "--cores", "1")
    assert _planned(_snakemake(code, work, config, "-n")) == ({}, set())  # nothing to do

    # nurd.py defines NURD, and GBTR (NURD with another regressor): both rerun, not Elapsed
    _edit(code / "stragglers" / "methods" / "nurd.py", work)
    counts, methods = _planned(_snakemake(code, work, config, "-n"))
    assert methods == {"NURD", "GBTR"}
    assert counts == {"predict": 2, "evaluate_dataset": 1}

    # a method from a `method_dirs` folder likewise
    _snakemake(code, work, config, "--cores", "1")
    _edit(extra / "always_fails.py", work)
    counts, methods = _planned(_snakemake(code, work, config, "-n"))
    assert methods == {"AlwaysFails"} and counts == {"predict": 1, "evaluate_dataset": 1}

    # a shared helper reruns every method built on it: base.py, all four
    _edit(code / "stragglers" / "methods" / "base.py", work)
    assert _planned(_snakemake(code, work, config, "-n"))[1] == {
        "NURD",
        "GBTR",
        "Elapsed",
        "AlwaysFails",
    }
