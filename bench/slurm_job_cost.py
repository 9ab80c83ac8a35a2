"""What a job submitted to SLURM costs: queueing and start-up, measured on a real cluster (not a
test; docs/cluster.md, "Cost per submitted job").

    python bench/slurm_job_cost.py WORKDIR --configfile CONFIG [--no-group] [--target T ...]

runs the workflow on CONFIG in WORKDIR through workflow/profiles/slurm +
workflow/profiles/slurm-local (the one-node cluster of workflow/profiles/slurm/local/up.sh,
which must be up), keeping every SLURM log, then reads, for each submitted job, its submit,
start and end times from `scontrol show job` (kept MinJobAge = 3600 s after the end) and the
seconds of the rules it ran from their benchmark files (the `benchmark:` lines of its SLURM
log). With --no-group, prediction jobs are submitted one by one (--group-components
predict=1) instead of 24 to a job.

Printed (JSON): submitted jobs; per job the mean wait in the queue (start - submit) and the
mean start-up (end - start - the seconds of its rules, for jobs whose rules all have
benchmarks), so start-up is the cost of a fresh Python + Snakemake + imports on the node; the
whole run's wall time and the machine's load average (wall seconds on a shared machine are
inflated by its load). SLURM's times have 1 s resolution: means over many jobs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ["workflow/profiles/slurm", "workflow/profiles/slurm-local"]
SUBMITTED = re.compile(r"has been submitted with SLURM jobid (\d+) \(log: (\S+)\)")
BENCHMARK = re.compile(r"^\s*benchmark: (\S+)", re.MULTILINE)


def run_workflow(workdir: Path, config: Path, group: bool, targets: list[str]) -> tuple[str, float]:
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(config.resolve()),
        "--replace-workflow-config",
        *(arg for profile in PROFILES for arg in ("--profile", profile)),
        "--slurm-keep-successful-logs",
        *([] if group else ["--group-components", "predict=1"]),
        *targets,
    ]
    started = time.monotonic()
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if run.returncode != 0:
        raise SystemExit(f"the SLURM run failed:\n{run.stderr[-6000:]}")
    return run.stdout + run.stderr, seconds


def slurm_times(job_id: str) -> dict[str, dt.datetime]:
    shown = subprocess.run(
        ["scontrol", "--oneliner", "show", "job", job_id],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    fields = dict(word.split("=", 1) for word in shown.split() if "=" in word)
    return {
        key: dt.datetime.fromisoformat(fields[key])
        for key in ("SubmitTime", "StartTime", "EndTime")
    }


def rule_seconds(workdir: Path, slurm_log: Path) -> float | None:
    """Seconds of the rules one submitted job ran (None when one has no benchmark file)."""
    text = slurm_log.read_text(errors="replace")
    files = BENCHMARK.findall(text)
    if not files or text.count("\nrule ") + text.count("\nlocalrule ") != len(files):
        return None
    return sum(float(pd.read_csv(workdir / f, sep="\t")["s"].iloc[0]) for f in files)


def job_costs(workdir: Path, output: str) -> dict:
    waits, startups = [], []
    submitted = SUBMITTED.findall(output)
    for job_id, log in submitted:
        times = slurm_times(job_id)
        waits.append((times["StartTime"] - times["SubmitTime"]).total_seconds())
        inside = rule_seconds(workdir, Path(log))
        if inside is not None:
            elapsed = (times["EndTime"] - times["StartTime"]).total_seconds()
            startups.append(elapsed - inside)
    return {
        "submitted_jobs": len(submitted),
        "mean_queue_wait_s": round(statistics.mean(waits), 2),
        "jobs_with_benchmarks": len(startups),
        "mean_startup_s": round(statistics.mean(startups), 2) if startups else None,
        "median_startup_s": round(statistics.median(startups), 2) if startups else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--configfile", type=Path, required=True)
    parser.add_argument("--no-group", action="store_true", help="one prediction per SLURM job")
    parser.add_argument("--target", nargs="*", default=[], help="targets (default: the run)")
    args = parser.parse_args()
    output, seconds = run_workflow(args.workdir, args.configfile, not args.no_group, args.target)
    (args.workdir / "slurm_run.log").write_text(output)
    result = {
        "config": str(args.configfile),
        "grouped": not args.no_group,
        **job_costs(args.workdir.resolve(), output),
        "run_wall_s": round(seconds, 1),
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
