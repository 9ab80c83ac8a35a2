"""Where the default run's time goes: per-job start-up, Snakemake's own work, and each rule's
real work (not a timed test; run from the repository root).

    python bench/run_split.py                    # runs `snakemake --cores 2` in a scratch dir
    python bench/run_split.py --workdir DIR      # reads a finished run in DIR (no new run)

Every rule's last log line (stragglers/io.py, `run_rule`) gives the CPU seconds its process
spent before the rule's work began (interpreter, Snakemake's script preamble, module imports)
and during the work (including the imports a method does lazily: a method's library is part of
its job's work). Snakemake's metadata names the rule of every log. The run's total CPU (the
snakemake process and all its children, from getrusage) minus the jobs' processes is
Snakemake's own CPU: loading the workflow, building the DAG, scheduling, and the script
preamble Snakemake writes and starts for each job.

Prints a Markdown table and writes bench/out/run_split.{json,csv}.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
CPU_LINE = re.compile(r"rule cpu: start_up_s=([0-9.]+) work_s=([0-9.]+)")


def run_default(workdir: Path, cores: int) -> dict[str, float]:
    """`snakemake --cores N` on the default config in `workdir`: wall and total CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--cores",
            str(cores),
            "--snakefile",
            str(ROOT / "Snakefile"),
            "--directory",
            str(workdir),
            "--configfile",
            str(ROOT / "config" / "config.yaml"),
            "-q",
        ],
        check=True,
    )
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu}


def job_cpu(workdir: Path) -> pd.DataFrame:
    """One row per finished job: its rule, and the start-up and work CPU its log reports."""
    rows = []
    seen_logs: set[str] = set()
    # long output paths are stored as nested folders: read every file below metadata/
    for path in sorted(p for p in (workdir / ".snakemake" / "metadata").rglob("*") if p.is_file()):
        meta = json.loads(path.read_text())
        for log in meta.get("log") or []:
            if log in seen_logs:  # a job with several outputs has one metadata file per output
                continue
            seen_logs.add(log)
            text = (workdir / log).read_text() if (workdir / log).exists() else ""
            found = CPU_LINE.findall(text)
            if not found:
                continue
            start_up, work = map(float, found[-1])
            rows.append({"rule": meta["rule"], "log": log, "start_up_s": start_up, "work_s": work})
    if not rows:
        raise SystemExit(f"{workdir}: no job logs with a 'rule cpu:' line (a finished run?)")
    return pd.DataFrame(rows)


def split(jobs: pd.DataFrame, totals: dict[str, float] | None) -> tuple[pd.DataFrame, dict]:
    per_rule = (
        jobs.groupby("rule")
        .agg(jobs=("log", "size"), start_up_s=("start_up_s", "sum"), work_s=("work_s", "sum"))
        .sort_values("work_s", ascending=False)
    )
    per_rule["start_up_per_job_s"] = per_rule["start_up_s"] / per_rule["jobs"]
    summary = {
        "jobs": int(len(jobs)),
        "start_up_cpu_s": float(jobs["start_up_s"].sum()),
        "work_cpu_s": float(jobs["work_s"].sum()),
        "start_up_per_job_cpu_s_median": float(jobs["start_up_s"].median()),
        "start_up_per_job_cpu_s_max": float(jobs["start_up_s"].max()),
    }
    if totals:
        summary |= {
            "wall_s": totals["wall_s"],
            "total_cpu_s": totals["cpu_s"],
            "snakemake_own_cpu_s": totals["cpu_s"]
            - summary["start_up_cpu_s"]
            - summary["work_cpu_s"],
        }
        summary["snakemake_own_cpu_per_job_s"] = summary["snakemake_own_cpu_s"] / len(jobs)
    summary["load_average_1min"] = os.getloadavg()[0]
    return per_rule, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, help="a finished run to read (no new run)")
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    totals = None
    workdir = args.workdir
    if workdir is None:
        workdir = Path(tempfile.mkdtemp(prefix="run-split-"))
        totals = run_default(workdir, args.cores)
    per_rule, summary = split(job_cpu(workdir), totals)
    summary["workdir"] = str(workdir)
    OUT.mkdir(parents=True, exist_ok=True)
    per_rule.round(3).to_csv(OUT / "run_split.csv")
    (OUT / "run_split.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(per_rule.round(2).to_markdown())
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
