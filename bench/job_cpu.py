"""CPU seconds of single prediction jobs, run in this process as their rules run them: a
`predict` job (one method over shard 0) or a `fingerprint_replay` job (one method under
`protocol: paper`), on a dataset a finished run has converted (`resources/converted/`).
Threads as Snakemake gives a `threads: 1` job (OMP_NUM_THREADS and the BLAS variables set
to 1 before anything loads them). With `--profile FILE`, each job's cProfile is written to
FILE.<rule>.<dataset>.<method> and its heaviest functions printed.

    python bench/job_cpu.py predict google-2011-usage SOS SOD [--configfile C] [--out DIR]
    python bench/job_cpu.py fingerprint google-synthetic XGBOD --profile scratch/xgbod

One line per job: `rule dataset method cpu_s=...` (the rule's work: its function's
`time.process_time`, the method's lazy imports included, this script's start-up not). Methods
after the first share its imports and compiled code: one method per call measures a job.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # before numpy loads: as Snakemake sets them

import argparse  # noqa: E402
import cProfile  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import yaml  # noqa: E402

from stragglers.replay.core import dataset_replay  # noqa: E402


def predict_job(config: dict, dataset: str, method: str, out: Path) -> Any:
    """Rule predict's work for shard 0 of `dataset` (tuning off, as the default config)."""
    from stragglers.rules.predict import predict

    entry = dict(config["methods"].get(method) or {})
    name = entry.pop("method", method)
    ds = config["datasets"][dataset]
    return predict(
        manifest=f"resources/converted/{dataset}/manifest.parquet",
        shard_jobs=[],
        tuned=[],
        tasks=str(out / f"{dataset}.{method}.tasks.parquet"),
        jobs=str(out / f"{dataset}.{method}.jobs.parquet"),
        dataset=dataset,
        method=method,
        shard=0,
        kind=ds["kind"],
        method_name=name,
        method_params=entry,
        replay=dataset_replay(config["replay"], ds),
        seed=config["seed"],
        kill_delay=config["simulation"].get("policies", {}).get("kill_delay"),
        tuning_jobs=0,
    )


def fingerprint_job(config: dict, dataset: str, method: str, out: Path) -> Any:
    """Rule fingerprint_replay's work: `method` over every job of `dataset` under paper."""
    from stragglers.rules.fingerprint import fingerprint_replay

    ds = config["datasets"][dataset]
    return fingerprint_replay(
        manifest=f"resources/converted/{dataset}/manifest.parquet",
        converted_jobs=[],
        job_metrics=str(out / f"{dataset}.{method}.fingerprint.csv"),
        dataset=dataset,
        fingerprint_method=method,
        kind=ds["kind"],
        method_params=config["methods"].get(method) or {},
        replay=dataset_replay(config["replay"], ds),
        seed=config["seed"],
        tuning_jobs=0,
    )


JOBS = {"predict": predict_job, "fingerprint": fingerprint_job}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rule", choices=sorted(JOBS))
    parser.add_argument("dataset")
    parser.add_argument("methods", nargs="+")
    parser.add_argument("--configfile", default="config/config.yaml")
    parser.add_argument("--out", default="scratch/job_cpu", help="where the outputs go")
    parser.add_argument("--profile", help="cProfile each job to PROFILE.<rule>.<dataset>.<method>")
    args = parser.parse_args()
    config = yaml.safe_load(Path(args.configfile).read_text())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for method in args.methods:
        profile = cProfile.Profile() if args.profile else None
        start = time.process_time()
        if profile:
            profile.enable()
        JOBS[args.rule](config, args.dataset, method, out)
        if profile:
            profile.disable()
        cpu = time.process_time() - start
        print(f"{args.rule} {args.dataset} {method} cpu_s={cpu:.2f}", flush=True)
        if profile:
            path = f"{args.profile}.{args.rule}.{args.dataset}.{method}"
            profile.dump_stats(path)
            pstats.Stats(path).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
