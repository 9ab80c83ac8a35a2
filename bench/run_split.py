"""Where the time of the default run and of the test suite goes (a benchmark, not a test).

Per job: start-up, Snakemake's own work, each rule's real work; for the suite, its longest
tests against all the others. Run from the repository root:

    python bench/run_split.py                    # runs `snakemake --cores 2` in a scratch dir
    python bench/run_split.py --workdir DIR      # reads a finished run in DIR (no new run)
    python bench/run_split.py --suite            # runs the README's test command instead
    python bench/run_split.py --configfile tests/configs/tiny/config.yaml -- --scheduler greedy
    ... --max-wall-s 180 --max-cpu-s 400         # exits non-zero above either (a guard)

Every rule's last log line (stragglers/io.py, `run_rule`) gives the CPU seconds its process
spent before the rule's work began (interpreter, Snakemake's script preamble, module imports)
and during the work (including the imports a method does lazily: a method's library is part of
its job's work). Snakemake's metadata names the rule of every log. The run's total CPU (the
snakemake process and all its children, from getrusage) minus the jobs' processes is
Snakemake's own CPU: loading the workflow, building the DAG, scheduling, and the script
preamble Snakemake writes and starts for each job.

`--suite` runs `pytest --durations=0` with `STRAGGLERS_REQUIRE_SLURM=1` and
`STRAGGLERS_REQUIRE_SPARK=1`, the fast tier as the README's first test command runs it;
`--suite -- -m "e2e or slow or spark"` the other tier, as its second does. It splits the wall
time by test: each end-to-end test (the whole Snakemake runs and the SLURM cluster's start,
`setup` phase included) and the sum over every other test.

Prints Markdown tables and writes bench/out/run_split.{json,csv} (suite_split.{json,csv}).
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


DURATION_LINE = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S+)", re.MULTILINE)
SUMMARY_LINE = re.compile(r"=+ (.*(?:passed|failed|error).*) in [0-9.]+s")


# the Snakemake runs of the suite (tests/conftest.py runs them first, on their own workers)
END_TO_END_MODULES = (
    "test_slurm.py",
    "test_cluster_generic.py",
    "test_workflow.py",
    "test_sensitivity_run.py",
)


def timed(command: list[str], **kwargs) -> tuple[subprocess.CompletedProcess, dict[str, float]]:
    """Run `command`; its wall seconds and the CPU seconds of it and all its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(command, **kwargs)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, {"wall_s": wall, "cpu_s": cpu}


def run_default(workdir: Path, cores: int, configfile: Path, extra: list[str]) -> dict[str, float]:
    """`snakemake --cores N` on `configfile` in `workdir`: wall and total CPU seconds."""
    command = [
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
        str(configfile.resolve()),
        "-q",
        *extra,
    ]
    return timed(command, check=True)[1]


def run_suite(extra: list[str]) -> tuple[pd.DataFrame, dict]:
    """A README test command (a tier: `extra`) with every test's duration: per test (setup + call +
    teardown), the end-to-end tests one by one, and the rest summed."""
    environment = {**os.environ, "STRAGGLERS_REQUIRE_SLURM": "1", "STRAGGLERS_REQUIRE_SPARK": "1"}
    command = [sys.executable, "-m", "pytest", "--durations=0", "-q", *extra]
    done, totals = timed(command, cwd=ROOT, env=environment, capture_output=True, text=True)
    durations = pd.DataFrame(
        [(test, phase, float(s)) for s, phase, test in DURATION_LINE.findall(done.stdout)],
        columns=["test", "phase", "seconds"],
    )
    if durations.empty:
        raise SystemExit(f"no --durations lines in pytest's output:\n{done.stdout[-3000:]}")
    per_test = durations.pivot_table(
        index="test", columns="phase", values="seconds", aggfunc="sum", fill_value=0.0
    )
    per_test["seconds"] = per_test.sum(axis=1)
    per_test = per_test.sort_values("seconds", ascending=False)
    long_tests = per_test.index.str.contains("|".join(END_TO_END_MODULES))
    summary = {
        "returncode": done.returncode,
        "result": (SUMMARY_LINE.findall(done.stdout) or ["?"])[-1],
        "wall_s": totals["wall_s"],
        "total_cpu_s": totals["cpu_s"],
        "tests": int(len(per_test)),
        "end_to_end_s": per_test.loc[long_tests, "seconds"].round(1).to_dict(),
        "every_other_test_s": float(per_test.loc[~long_tests, "seconds"].sum()),
        "longest_other_test_s": float(per_test.loc[~long_tests, "seconds"].max()),
        "load_average_1min": os.getloadavg()[0],
    }
    return per_test, summary


def guard(summary: dict, max_wall_s: float | None, max_cpu_s: float | None) -> None:
    """Exit non-zero naming the figure above its limit (a regression guard)."""
    over = []
    if max_wall_s is not None and summary["wall_s"] > max_wall_s:
        over.append(f"wall {summary['wall_s']:.0f} s > --max-wall-s {max_wall_s:g}")
    cpu = summary.get("total_cpu_s")
    if max_cpu_s is not None and cpu is not None and cpu > max_cpu_s:
        over.append(f"CPU {cpu:.0f} s > --max-cpu-s {max_cpu_s:g}")
    if over:
        raise SystemExit("over budget: " + "; ".join(over))


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
    parser.add_argument(
        "--configfile", type=Path, default=ROOT / "config" / "config.yaml", help="the run's config"
    )
    parser.add_argument("--suite", action="store_true", help="time the test suite instead")
    parser.add_argument("--max-wall-s", type=float, help="fail above this wall time")
    parser.add_argument("--max-cpu-s", type=float, help="fail above this CPU time (new runs)")
    parser.add_argument("extra", nargs="*", help="after --: more snakemake (or pytest) options")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.suite:
        per_test, summary = run_suite(args.extra)
        per_test.round(2).to_csv(OUT / "suite_split.csv")
        (OUT / "suite_split.json").write_text(json.dumps(summary, indent=2) + "\n")
        print(per_test.head(15).round(1).to_markdown())
        print(json.dumps(summary, indent=2))
        guard(summary, args.max_wall_s, args.max_cpu_s)
        if summary["returncode"] != 0:
            raise SystemExit(f"the suite failed: {summary['result']}")
        return
    totals = None
    workdir = args.workdir
    if workdir is None:
        workdir = Path(tempfile.mkdtemp(prefix="run-split-"))
        totals = run_default(workdir, args.cores, args.configfile, args.extra)
    per_rule, summary = split(job_cpu(workdir), totals)
    summary["workdir"] = str(workdir)
    per_rule.round(3).to_csv(OUT / "run_split.csv")
    (OUT / "run_split.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(per_rule.round(2).to_markdown())
    print(json.dumps(summary, indent=2))
    if totals:
        guard(summary, args.max_wall_s, args.max_cpu_s)


if __name__ == "__main__":
    main()
