"""Benchmarks of the backbone (not timed tests): run from the repository root.

    python bench/bench_pipeline.py pipeline      # wall time of `snakemake --cores 2` (default config)
    python bench/bench_pipeline.py nurd-vs-gbr   # NURD vs a GradientBoostingRegressor refit at every checkpoint
    python bench/bench_pipeline.py dag           # `snakemake -n`: 8,400 Google jobs, 500 + 500 parts downloaded

Each prints a JSON line and writes it to bench/out/<name>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"


def emit(name: str, result: dict) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


def bench_pipeline(cores: int) -> None:
    """The whole default pipeline from nothing, in a scratch working directory."""
    work = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    began = time.perf_counter()
    subprocess.run(
        [
            "snakemake",
            "--cores",
            str(cores),
            "--snakefile",
            str(ROOT / "Snakefile"),
            "--directory",
            str(work),
            "--configfile",
            str(ROOT / "config" / "config.yaml"),
            "-q",
        ],
        check=True,
    )
    seconds = time.perf_counter() - began
    emit(
        "pipeline",
        {
            "benchmark": "default pipeline",
            "cores": cores,
            "seconds": round(seconds, 1),
            "workdir": str(work),
        },
    )


def _mean_f1(tasks, jobs) -> float:
    from stragglers.evaluate.metrics import job_metrics

    metrics = job_metrics(tasks, jobs)
    return float(metrics.loc[metrics["status"] == "ok", "F1"].mean())


def bench_nurd_vs_gbr(n_jobs: int, seed: int) -> None:
    """Same jobs, same run: NURD as configured by default (native XGBoost refit when tasks
    have finished, Newton-method propensity) against the reference code's loop (scikit-learn's
    GradientBoostingRegressor refit at every checkpoint)."""
    from stragglers.convert.one_process import convert_google
    from stragglers.formats.jobs import iter_shard_jobs
    from stragglers.methods import get_method
    from stragglers.replay.service import JobSelection, MethodRun, replay_methods
    from stragglers.traces.generate import GoogleGeneratorConfig, generate_google

    work = Path(tempfile.mkdtemp(prefix="bench-nurd-"))
    generate_google(work / "raw", GoogleGeneratorConfig.from_dict({"n_jobs": n_jobs, "seed": seed}))
    convert_google(work / "raw", work / "converted", dataset="bench", n_shards=1)
    jobs = list(iter_shard_jobs(work / "converted", "google-2011", 0))
    get_method("NURD")  # import every method module before timing; the libraries NURD uses:
    import sklearn.ensemble  # noqa: F401
    import xgboost  # noqa: F401

    reference_loop = {"regressor": "sklearn-gbr", "refit_every_checkpoint": True}
    variants = {
        "NURD (xgboost, refit when tasks finished)": ("NURD", {}),
        "NURD (sklearn GBR, refit every checkpoint)": ("NURD", reference_loop),
        "GBTR (xgboost, refit when tasks finished)": ("GBTR", {}),
        "GBTR (sklearn GBR, refit every checkpoint)": ("GBTR", reference_loop),
    }
    result = {
        "benchmark": "NURD vs GBR refit at every checkpoint",
        "jobs": len(jobs),
        "tasks": int(sum(j.n_tasks for j in jobs)),
        "variants": {},
    }
    replayed = replay_methods(
        work / "converted",
        "google-2011",
        [MethodRun(method, method, params) for method, params in variants.values()],
        dataset="bench",
        seed=seed,
        replay={},
        selection=JobSelection(jobs=tuple(jobs)),  # read once, before the clock
    )
    for label, run in zip(variants, replayed):
        job_rows = run.jobs
        result["variants"][label] = {
            "seconds": round(run.seconds, 2),
            "seconds_per_job": round(run.seconds / len(jobs), 4),
            "checkpoints": int(job_rows["n_checkpoints"].sum()),
            "mean_F1": round(_mean_f1(run.tasks, job_rows), 4),
            "failed_jobs": int((job_rows["status"] != "ok").sum()),
        }
    v = list(result["variants"].values())
    result["speedup_NURD"] = round(v[1]["seconds"] / v[0]["seconds"], 1)
    result["speedup_GBTR"] = round(v[3]["seconds"] / v[2]["seconds"], 1)
    shutil.rmtree(work)
    emit("nurd_vs_gbr", result)


def bench_dag(n_jobs: int, jobs_per_shard: int, parts_per_job: int = 1) -> None:
    """`snakemake -n` on a configuration the size of the paper's Google run: the whole trace
    downloaded (500 task_events + 500 task_usage parts: one download job per file, one
    convert_part job per usage part), 8,400 jobs in shards of `jobs_per_shard`, every
    registered method. The DAG depends on part and shard counts, not on the manifest's
    contents, so this is the dry-run cost of the full reproduction (no network is used)."""
    from stragglers.methods import available_methods

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    n_shards = int(np.ceil(n_jobs / jobs_per_shard))
    config["datasets"] = {
        "google-2011": {
            "kind": "google-2011",
            "source": "download",
            "download": {"parts": "all"},
            "convert": {"parts_per_job": parts_per_job},
            "n_shards": n_shards,
            "min_tasks": 100,
            "replay": {"grid_origin": 600, "checkpoint_interval": 300},
        }
    }
    methods = available_methods()
    config["methods"] = {m: {} for m in methods}
    work = Path(tempfile.mkdtemp(prefix="bench-dag-"))
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    import resource

    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    completed = subprocess.run(
        [
            "snakemake",
            "-n",
            "--snakefile",
            str(ROOT / "Snakefile"),
            "--directory",
            str(work),
            "--configfile",
            str(work / "config.yaml"),
            "--replace-workflow-config",
            "--quiet",
            "rules",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - began
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    counts = {
        fields[0]: int(fields[1])
        for fields in (line.split() for line in completed.stdout.splitlines())
        if len(fields) == 2 and fields[1].isdigit()
    }
    emit(
        "dag",
        {
            "benchmark": "snakemake -n, full Google size (500 + 500 parts downloaded)",
            "jobs": n_jobs,
            "shards": n_shards,
            "methods": len(methods),
            "parts_per_convert_job": parts_per_job,
            "snakemake_jobs": counts.get("total"),
            "jobs_per_rule": {k: v for k, v in counts.items() if k != "total"},
            "seconds": round(seconds, 1),
            "cpu_seconds": round(cpu, 1),
            "load_average_1min": round(os.getloadavg()[0], 1),
        },
    )
    shutil.rmtree(work)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("pipeline")
    p.add_argument("--cores", type=int, default=2)
    p = sub.add_parser("nurd-vs-gbr")
    p.add_argument("--jobs", type=int, default=30)
    p.add_argument("--seed", type=int, default=20220301)
    p = sub.add_parser("dag")
    p.add_argument("--jobs", type=int, default=8400)
    p.add_argument("--jobs-per-shard", type=int, default=100)
    p.add_argument(
        "--parts-per-job", type=int, default=1, help="task_usage parts per convert_part job"
    )
    args = parser.parse_args()
    if args.what == "pipeline":
        bench_pipeline(args.cores)
    elif args.what == "nurd-vs-gbr":
        bench_nurd_vs_gbr(args.jobs, args.seed)
    else:
        bench_dag(args.jobs, args.jobs_per_shard, args.parts_per_job)


if __name__ == "__main__":
    sys.exit(main())
