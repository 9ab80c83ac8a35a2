"""Scale check (not a test): a generated Google dataset of N jobs end to end through Snakemake's
cluster-generic executor, each job a separate local process (workflow/profiles/local-processes).

    python bench/scale_cluster.py --jobs 5000 --shards 50 --methods NURD Oracle --group 10

Shards of ~100 trace jobs match the full Google reproduction (8,425 jobs in 84 shards). The
prediction jobs are bundled `--group` at a time (group `predict`, as in the cluster profiles).
Prints a JSON line (wall time, Snakemake jobs submitted, trace jobs and tasks converted, the
per-job start-up cost) and writes it to bench/out/scale_cluster.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "workflow" / "profiles" / "local-processes"
sys.path.insert(0, str(ROOT / "bench"))

from job_overhead import job_overheads  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=5000, help="trace jobs to generate")
    parser.add_argument("--shards", type=int, default=50)
    parser.add_argument("--methods", nargs="+", default=["NURD", "Oracle"])
    parser.add_argument("--group", type=int, default=10, help="prediction jobs per submitted job")
    parser.add_argument("--parallel", type=int, default=2, help="submitted jobs running at once")
    parser.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "stragglers-scale-cluster"
    )
    args = parser.parse_args()

    work = args.workdir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    config = {
        "seed": 20220301,
        "datasets": {
            "google-scale": {
                "kind": "google-2011",
                "source": "generate",
                "generator": {"n_jobs": args.jobs},
                "n_shards": args.shards,
                "min_tasks": 100,
                "replay": {"grid_origin": 600, "checkpoint_interval": 300},
            }
        },
        "replay": {"start_fraction": 0.04, "straggler_quantile": 0.9, "protocol": "causal"},
        "methods": {name: {} for name in args.methods},
        "evaluation": {"f1_time_points": 10},
        "simulation": {"repeats": 5, "machines": [100, 200, 300, 400, 500, 600, 700, 800, 900]},
    }
    config_path = work / "config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    state = work / "submitted"
    python = sys.executable
    command = [
        python,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(work),
        "--configfile",
        str(config_path),
        "--replace-workflow-config",
        "--executor",
        "cluster-generic",
        "--cluster-generic-submit-cmd",
        f"{python} {PROFILE / 'submit.py'} {state}",
        "--cluster-generic-status-cmd",
        f"{python} {PROFILE / 'status.py'} {state}",
        "--cluster-generic-cancel-cmd",
        f"{python} {PROFILE / 'cancel.py'} {state}",
        "--jobs",
        str(args.parallel),
        "--latency-wait",
        "10",
        "--max-status-checks-per-second",
        "2",
        "--group-components",
        f"predict={args.group}",
        "-q",
    ]
    began = time.perf_counter()
    subprocess.run(command, check=True)
    seconds = time.perf_counter() - began

    report = json.loads(
        (work / "resources" / "converted" / "google-scale" / "report.json").read_text()
    )
    overheads = job_overheads(work, state)
    result = {
        "benchmark": "scale check through cluster-generic",
        "trace_jobs_generated": args.jobs,
        "trace_jobs_kept": report["counts"]["jobs_kept"],
        "tasks_kept": report["counts"]["tasks_kept"],
        "shards": args.shards,
        "methods": args.methods,
        "predict_group_size": args.group,
        "submitted_jobs": len(list(state.iterdir())),
        "parallel_submitted_jobs": args.parallel,
        "wall_seconds": round(seconds, 1),
        "per_job_startup_seconds": overheads["summary"],
        "workdir": str(work),
    }
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale_cluster.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
