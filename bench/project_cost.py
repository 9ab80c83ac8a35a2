"""The cost of a full reproduction, projected from measurements (not a test).

    python bench/project_cost.py WORKDIR [--configfile CONFIG] [--cores 1 16 64 256] [--convert-seconds-per-gb 133]

WORKDIR is a finished run of the workflow (e.g. the default config, every method). From it:

- prediction: each method's CPU seconds per task = the rule's own work in its shards (the
  `work_s` of the `rule cpu:` line in logs/predict/<dataset>/<method>/shard-N.log) / the tasks
  in those shards (n_tasks of results/*/predictions/*/shard-*.jobs.parquet);
- simulation (the relaunch simulation and the mitigation policies, one job per method) and
  evaluation: the same from logs/simulate (per method) and logs/evaluate (per dataset, when
  present) / the dataset's tasks;
- per rule job start-up: the median over those jobs of their `benchmarks/` `cpu_time` minus
  their `work_s` (the job's Python, its imports and Snakemake's script preamble), paid once
  per rule job (a prediction job per method and shard, a simulation job per method). A run
  without the `rule cpu:` lines is projected from the `cpu_time` alone, as before: that
  start-up, a fixed cost per job, then scales with the tasks (the default run's 15-30 jobs a
  shard against the full run's ~100 made it about 15 % of the projected prediction);
- conversion: CPU seconds per compressed GB of raw trace, from bench/bench_convert.py
  (--convert-seconds-per-gb; default the per-part job's 11.25 CPU s on its 129.5 MB part);
- per submitted job start-up: --startup-seconds, CPU seconds paid once per submitted job
  (prediction jobs grouped --group at a time). Default 2.6 s: measured on SLURM
  (docs/cluster.md, "Cost per submitted job": the CPU of a submitted job's own Snakemake
  start-up, 2.3-2.8 s user + system over 3 runs), replacing the 5-8 s wall-clock readings taken
  through cluster-generic on a loaded machine (bench/job_overhead.py).

Assumptions (printed with the result): cost is linear in the number of tasks (the real Google
selection has 1.1 M tasks in 8,425 jobs, 131 per job; the synthetic data has more per job, so
methods quadratic in a job's tasks are overestimated); Alibaba's "1 M" (paper, Sec. 6) is read
as instances, i.e. our tasks; the same per-task and per-GB costs hold on real rows; downloads
(41 GB + 20 GB) are network-bound and left out; wall time on N cores = sum over stages of
max(stage CPU / N, the stage's longest single job), i.e. perfect packing within a stage.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
from pathlib import Path

import pandas as pd
import yaml

FULL = {
    "google": {
        "tasks": 1_100_000,
        "jobs": 8425,
        "shards": 84,
        "raw_gb": 41.0,
        "conversion_jobs_today": 1,
        "conversion_jobs_scattered": 1000,
    },
    "alibaba": {
        "tasks": 1_000_000,
        "jobs": 10_000,
        "shards": 100,
        "raw_gb": 20.0,
        "conversion_jobs_today": 1,
        "conversion_jobs_scattered": 1,
    },
}
KIND = {
    "google-2011": "google",
    "google-2011-events": "google",
    "alibaba-2018": "alibaba",
    "alibaba-2017": "alibaba",
}


WORK_LINE = re.compile(r"rule cpu: start_up_s=([0-9.]+) work_s=([0-9.]+)")


def cpu(path: Path) -> float:
    return float(pd.read_csv(path, sep="\t")["cpu_time"].iloc[0])


def work_cpu(benchmark: Path, log: Path, startups: list[float]) -> float:
    """The rule's own work in the job of `benchmark` (its log's last `rule cpu:` line), its
    start-up (benchmark CPU - work) appended to `startups`; the benchmark's CPU when the log
    has no such line."""
    total = cpu(benchmark)
    found = WORK_LINE.findall(log.read_text()) if log.is_file() else []
    if not found:
        return total
    work = float(found[-1][1])
    startups.append(total - work)
    return work


def measured_rates(workdir: Path, config_path: Path) -> dict:
    """CPU seconds per task, per dataset family and stage (prediction per method)."""
    config = yaml.safe_load(config_path.read_text())
    rates: dict = {}
    for dataset, settings in config["datasets"].items():
        if settings["kind"] not in KIND:
            # a dataset not in a full trace's raw format (the four real jobs in the NURD
            # authors' layout, a task table): its per-task rates are not the full run's
            print(f"{dataset}: kind {settings['kind']} is no full trace's, not projected")
            continue
        family = KIND[settings["kind"]]
        manifest = pd.read_parquet(
            workdir / "resources" / "converted" / dataset / "manifest.parquet"
        )
        tasks = int(manifest["n_tasks"].sum())
        entry = rates.setdefault(
            family,
            {
                "dataset": dataset,
                "tasks_measured": tasks,
                "jobs_measured": len(manifest),
                "predict": {},
                "simulate": {},
                "policies": {},
                "evaluate": None,
                "rule_startups": [],
            },
        )
        startups = entry["rule_startups"]
        for method_dir in sorted((workdir / "benchmarks" / "predict" / dataset).iterdir()):
            seconds, shard_tasks = 0.0, 0
            for tsv in method_dir.glob("shard-*.tsv"):
                jobs = (
                    workdir
                    / "results"
                    / dataset
                    / "predictions"
                    / method_dir.name
                    / f"{tsv.stem}.jobs.parquet"
                )
                log = workdir / "logs" / "predict" / dataset / method_dir.name / f"{tsv.stem}.log"
                seconds += work_cpu(tsv, log, startups)
                shard_tasks += int(pd.read_parquet(jobs, columns=["n_tasks"])["n_tasks"].sum())
            entry["predict"][method_dir.name] = seconds / shard_tasks
        for tsv in sorted((workdir / "benchmarks" / "simulate" / dataset).glob("*.tsv")):
            log = workdir / "logs" / "simulate" / dataset / f"{tsv.stem}.log"
            entry["simulate"][tsv.stem] = work_cpu(tsv, log, startups) / tasks
        for tsv in sorted((workdir / "benchmarks" / "policies" / dataset).glob("*.tsv")):
            if tsv.stem != "report":  # rule policies_report's, once per dataset
                entry["policies"][tsv.stem] = cpu(tsv) / tasks
        evaluate = workdir / "benchmarks" / "evaluate" / f"{dataset}.tsv"
        if evaluate.exists():
            log = workdir / "logs" / "evaluate" / f"{dataset}.log"
            entry["evaluate"] = work_cpu(evaluate, log, startups) / tasks
    return rates


def project(
    rates: dict, cores: list[int], convert_per_gb: float, startup: float, group: int
) -> dict:
    result = {}
    for family, full in FULL.items():
        if family not in rates:
            continue
        rate = rates[family]
        # each rule job's own Python start-up (0 when measured within the rates)
        rule_startup = statistics.median(rate["rule_startups"]) if rate["rule_startups"] else 0.0
        methods = sorted(rate["predict"])
        predict_cpu = sum(rate["predict"][m] for m in methods) * full["tasks"]
        slowest = max(rate["predict"].values())
        predict_jobs = len(methods) * full["shards"]
        stages = {
            # name: (CPU seconds, longest single job in seconds, submitted jobs)
            "conversion (one job, before scatter-gather)": (
                convert_per_gb * full["raw_gb"],
                convert_per_gb * full["raw_gb"],
                1,
            ),
            "prediction": (
                predict_cpu + rule_startup * predict_jobs,
                slowest * full["tasks"] / full["shards"] + rule_startup,
                math.ceil(predict_jobs / group),
            ),
            # one simulation job per method; methods not (yet) simulated in WORKDIR cost the
            # mean of those that were
            "simulation": (
                sum(rate["simulate"].values())
                / len(rate["simulate"])
                * len(methods)
                * full["tasks"]
                + rule_startup * len(methods),
                max(rate["simulate"].values(), default=0.0) * full["tasks"] + rule_startup,
                len(methods),
            ),
        }
        if rate["policies"]:
            # a run with separate mitigation-policy jobs per method (before they shared
            # simulate_method's job)
            stages["mitigation policies"] = (
                sum(rate["policies"].values())
                / len(rate["policies"])
                * len(methods)
                * full["tasks"],
                max(rate["policies"].values()) * full["tasks"],
                len(methods),
            )
        if rate["evaluate"] is not None:
            stages["evaluation"] = (
                rate["evaluate"] * full["tasks"] + rule_startup,
                rate["evaluate"] * full["tasks"] + rule_startup,
                1,
            )
        if full["conversion_jobs_scattered"] > 1:
            per_part = convert_per_gb * full["raw_gb"] / full["conversion_jobs_scattered"]
            scattered = (
                "conversion (one job per part)",
                (convert_per_gb * full["raw_gb"], per_part, full["conversion_jobs_scattered"]),
            )
        else:
            scattered = None

        def totals(stage_set: dict) -> dict:
            cpu_s = sum(c + startup * n for c, _, n in stage_set.values())
            wall = {
                n_cores: sum(
                    max((c + startup * n) / n_cores, longest + startup)
                    for c, longest, n in stage_set.values()
                )
                for n_cores in cores
            }
            return {
                "cpu_hours": round(cpu_s / 3600, 2),
                "wall_hours_on_cores": {str(k): round(v / 3600, 2) for k, v in wall.items()},
            }

        today = totals(stages)
        entry = {
            "tasks": full["tasks"],
            "jobs": full["jobs"],
            "shards": full["shards"],
            "methods": len(methods),
            "methods_simulated_in_workdir": len(rate["simulate"]),
            "stages_cpu_hours": {
                k: round((c + startup * n) / 3600, 2) for k, (c, _, n) in stages.items()
            },
            "longest_job_hours": {
                k: round(longest / 3600, 3) for k, (_, longest, _) in stages.items()
            },
            "slowest_method": max(rate["predict"], key=rate["predict"].get),
            "rule_job_startup_seconds": round(rule_startup, 3),
            "prediction_cpu_hours_by_method": {
                m: round(rate["predict"][m] * full["tasks"] / 3600, 3)
                for m in sorted(methods, key=rate["predict"].get, reverse=True)
            },
            "today": today,
        }
        if scattered:
            alt = {k: v for k, v in stages.items() if not k.startswith("conversion")}
            alt[scattered[0]] = scattered[1]
            entry["with_scattered_conversion"] = totals(alt)
        result[family] = entry
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("workdir", type=Path)
    parser.add_argument(
        "--configfile",
        type=Path,
        default=Path(__file__).resolve().parents[1] / "config" / "config.yaml",
        help="the config WORKDIR was run with",
    )
    parser.add_argument("--cores", type=int, nargs="+", default=[1, 16, 64, 256])
    parser.add_argument("--convert-seconds-per-gb", type=float, default=11.25 / 0.1295)
    parser.add_argument(
        "--startup-seconds", type=float, default=2.6, help="CPU s per submitted job (SLURM)"
    )
    parser.add_argument("--group", type=int, default=24, help="prediction jobs per submitted job")
    args = parser.parse_args()
    rates = measured_rates(args.workdir.resolve(), args.configfile)
    result = {
        "measured_in": str(args.workdir),
        "per_task_cpu_seconds": {
            f: {
                "predict_total_all_methods": sum(r["predict"].values()),
                "simulate_total": sum(r["simulate"].values()),
                "evaluate": r["evaluate"],
                "tasks_measured": r["tasks_measured"],
            }
            for f, r in rates.items()
        },
        "assumptions": {
            "convert_seconds_per_gb": round(args.convert_seconds_per_gb, 1),
            "startup_seconds_per_submitted_job": args.startup_seconds,
            "predict_group": args.group,
            "full_runs": FULL,
        },
        "projection": project(
            rates, args.cores, args.convert_seconds_per_gb, args.startup_seconds, args.group
        ),
    }
    out = Path(__file__).resolve().parent / "out"
    out.mkdir(exist_ok=True)
    (out / "project_cost.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
