"""Per-rule cluster resources from measured Snakemake `benchmark:` files (not a test).

    python bench/suggest_resources.py WORKDIR [WORKDIR...] [--jobs-per-shard 100]

Reads WORKDIR/benchmarks/<rule>/.../*.tsv (columns s, max_rss, mean_load, cpu_time) of one or
more finished runs and prints, per benchmark folder (= rule), the measured maxima and the
suggested `resources:`. Headroom rule (stated in the README, "Running on a cluster"):

- mem_mb  = 1.5 x the largest peak RSS measured, rounded up to 256 MB, at least 512 MB;
- runtime = 3 x the longest CPU time (`cpu_time`: what the job needs on a core of its own;
  wall time on a shared machine is inflated by waiting for a core), in whole minutes, at least
  5 minutes; for `predict` it is first scaled to --jobs-per-shard trace jobs (the full Google
  run has 8,425 jobs in 84 shards, ~100 per shard) from the slowest method's CPU seconds per
  trace job;
- cpus    = 1 where mean CPU load stays below 150% (every rule is single-threaded today).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pandas as pd

# benchmarks/convert/<dataset>/ holds the scatter-gather stages, told apart by file name
CONVERT_STAGES = {"prepare": "convert_prepare", "group": "convert_part", "shard": "gather_shard"}
BENCHMARK_RULES = {
    "predict": "predict",
    "simulate": "simulate_method",
    "policies": "simulate_policies",  # a run made before simulate_method ran both
    "generate": "generate_trace",
    "download": "download_trace",
    "tune": "tune_method",
    "evaluate": "evaluate_dataset",
}


def read_benchmarks(workdir: Path) -> pd.DataFrame:
    rows = []
    for path in sorted((workdir / "benchmarks").rglob("*.tsv")):
        relative = path.relative_to(workdir / "benchmarks")
        frame = pd.read_csv(path, sep="\t")
        row = frame.iloc[0]
        folder = relative.parts[0]
        if folder == "convert":
            folder = CONVERT_STAGES.get(relative.stem.split("-")[0], "convert")
        if folder == "policies" and relative.stem == "report":
            folder = "policies_report"  # once per dataset, not a per-method simulation
        record = {
            "folder": folder,
            "path": str(relative),
            "seconds": float(row["s"]),
            "cpu_seconds": float(row["cpu_time"]),
            "max_rss_mb": float(row["max_rss"]) if row["max_rss"] != "-" else float("nan"),
            "mean_load": float(row["mean_load"]) if "mean_load" in row else float("nan"),
            "jobs_in_shard": None,
        }
        if relative.parts[0] == "predict":
            dataset, method, shard = relative.parts[1], relative.parts[2], relative.stem
            record["method"] = method
            jobs = workdir / "results" / dataset / "predictions" / method / f"{shard}.jobs.parquet"
            if jobs.exists():
                record["jobs_in_shard"] = len(pd.read_parquet(jobs, columns=["job_id"]))
        rows.append(record)
    return pd.DataFrame(rows)


def round_up(value: float, step: int) -> int:
    return int(math.ceil(value / step) * step)


def suggest(frame: pd.DataFrame, jobs_per_shard: int) -> list[dict]:
    suggestions = []
    for folder, group in frame.groupby("folder"):
        longest = float(group["cpu_seconds"].max())
        basis = "longest measured job (CPU s)"
        if folder == "predict" and group["jobs_in_shard"].notna().any():
            per_job = group["cpu_seconds"] / group["jobs_in_shard"].astype(float)
            slowest = group.assign(per_job=per_job).groupby("method")["per_job"].max()
            longest = max(longest, float(slowest.max()) * jobs_per_shard)
            basis = f"slowest method ({slowest.idxmax()}, {slowest.max():.3f} CPU s/trace job) x {jobs_per_shard}"
        peak = float(group["max_rss_mb"].max())
        suggestions.append(
            {
                "rule": BENCHMARK_RULES.get(folder, folder),
                "benchmarks": int(len(group)),
                "max_seconds": round(float(group["seconds"].max()), 1),
                "max_cpu_seconds": round(float(group["cpu_seconds"].max()), 1),
                "max_rss_mb": round(peak, 1),
                "max_mean_load_percent": round(float(group["mean_load"].max()), 1),
                "runtime_basis": basis,
                "mem_mb": max(512, round_up(1.5 * peak, 256)),
                "runtime": max(5, math.ceil(3 * longest / 60)),
                "cpus": 1 if float(group["mean_load"].max()) < 150 else 2,
            }
        )
    return suggestions


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("workdirs", type=Path, nargs="+")
    parser.add_argument("--jobs-per-shard", type=int, default=100)
    args = parser.parse_args()
    frame = pd.concat([read_benchmarks(w.resolve()) for w in args.workdirs], ignore_index=True)
    suggestions = suggest(frame, args.jobs_per_shard)
    print(pd.DataFrame(suggestions).to_string(index=False))
    print(json.dumps(suggestions))


if __name__ == "__main__":
    main()
