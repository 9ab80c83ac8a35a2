"""Per-job start-up cost of submitted jobs: the wall time of each process started by
workflow/profiles/local-processes/submit.py minus the time its rule's own `benchmark:` measured.
What remains is the price of a job that runs alone: a fresh Python, Snakemake parsing the
Snakefile and building the job's DAG, importing the library, and the status polling delay.

    python bench/job_overhead.py WORKDIR [STATE_DIR]     # STATE_DIR defaults to WORKDIR/submitted
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def job_properties(job: Path) -> dict:
    for line in (job / "jobscript.sh").read_text().splitlines():
        if line.startswith("# properties = "):
            return json.loads(line.removeprefix("# properties = "))
    raise ValueError(f"{job}: no properties line in the job script")


def target_rules(job: Path) -> list[str]:
    """Rule names of the jobs a submitted script runs (one, or several for a group job)."""
    for line in (job / "jobscript.sh").read_text().splitlines():
        if "--target-jobs" in line:
            words = shlex.split(line[line.index("--target-jobs") :])[1:]
            return [
                w.split(":", 1)[0]
                for w in words[
                    : next((i for i, w in enumerate(words) if w.startswith("--")), len(words))
                ]
            ]
    return []


def benchmark_seconds(workdir: Path, log: str) -> float | None:
    """A rule's benchmark file mirrors its log path (logs/<x>.log -> benchmarks/<x>.tsv)."""
    path = workdir / ("benchmarks" + log.removeprefix("logs").removesuffix(".log") + ".tsv")
    if not path.exists():
        return None
    return float(pd.read_csv(path, sep="\t")["s"].iloc[0])


def job_overheads(workdir: Path, state: Path) -> dict:
    rows = []
    for job in sorted(p for p in state.iterdir() if (p / "ended").exists()):
        props = job_properties(job)
        wall = float((job / "ended").read_text()) - float((job / "started").read_text())
        logs = props.get("log", [])
        if props.get("type") == "group":
            logs = [log for sub in props.get("jobs", []) for log in sub.get("log", [])] or logs
        measured = [benchmark_seconds(workdir, log) for log in logs]
        if not logs or any(m is None for m in measured):
            continue  # a rule without a benchmark: its own work is not separable
        rules = target_rules(job)
        rows.append(
            {
                "rules": ",".join(sorted(set(rules))),
                "n_jobs": max(len(rules), 1),
                "wall_seconds": wall,
                "benchmark_seconds": sum(measured),
                "overhead_seconds": wall - sum(measured),
            }
        )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return {"rows": frame, "summary": {}}
    overhead = frame["overhead_seconds"].to_numpy()
    summary = {
        "submitted_jobs_measured": int(len(frame)),
        "median": round(float(np.median(overhead)), 2),
        "p90": round(float(np.quantile(overhead, 0.9)), 2),
        "min": round(float(overhead.min()), 2),
    }
    return {"rows": frame, "summary": summary}


if __name__ == "__main__":
    workdir = Path(sys.argv[1]).resolve()
    state = Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else workdir / "submitted"
    result = job_overheads(workdir, state)
    print(result["rows"].to_string(index=False))
    print(json.dumps(result["summary"]))
