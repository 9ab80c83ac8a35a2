"""The cost of a full reproduction, projected from measurements (not a test).

    python bench/project_cost.py WORKDIR [--configfile CONFIG] [--import-seconds FILE] [--stage-scaling FILE] [--out FILE] [--cores 1 16 64 256] [--convert-seconds-per-gb RATE]

WORKDIR is a finished run of the workflow (e.g. the default config, every method). From it:

- prediction: each method's CPU seconds per task = the rule's own work in its shards (the
  `work_s` of the `rule cpu:` line in logs/predict/<dataset>/<method>/shard-N.log), less the
  method's one-time cost per process (below) once per shard, / the tasks in those shards
  (n_tasks of results/*/predictions/*/shard-*.jobs.parquet);
- the method's one-time cost per prediction process (`import_s`, --import-seconds, the JSON
  bench/import_cpu.py writes): `work_s` includes the method's lazy imports (PyOD,
  scikit-learn, torch, xgboost, lifelines, numba's cache loading), paid by the first job of
  each shard that fits. bench/import_cpu.py measures it in a fresh process per method (threads
  as a `threads: 1` job): after the imports the rule's start-up already holds
  (stragglers.rules.predict, before the `work_s` clock), the CPU of replaying shard 0's first
  jobs with a checkpoint minus the CPU of replaying them again in the same process. It is
  charged once per prediction rule job (a method's shard), not per task: per task, the default
  run's few thousand tasks a shard against the full run's ~13,000 charged it ~176 times a
  shard. The simulation rule pays no such cost (its modules are imported at its module's top,
  in its start-up). Without --import-seconds it is 0: every cost per task, as before. Both
  projections are written: `projection` (imports once per rule job) and
  `projection_imports_per_task` (the old accounting);
- simulation (the relaunch simulation and the mitigation policies, one job per method) and
  evaluation (one job per dataset, every method's predictions): the same from logs/simulate
  (per method) and logs/evaluate (per dataset, when present) / the dataset's tasks; or, with
  --stage-scaling (the JSON `bench/stage_cpu.py {evaluate,simulate} DATASET all --tile 8
  --scaling FILE` writes), from each job's work on the run's predictions and on 8 copies of
  them: their difference is the cost per task, the rest a fixed cost paid once per job (the
  evaluation's figures, the PNG writing, matplotlib's import: most of its work in the default
  run, which per task would be charged ~176 times at Google's size). Methods not measured
  there keep their cost per task;
- per rule job start-up: the median over those jobs of their `benchmarks/` `cpu_time` minus
  their `work_s` (the job's Python, its imports and Snakemake's script preamble), paid once
  per rule job (a prediction job per method and shard, a simulation job per method). A run
  without the `rule cpu:` lines is projected from the `cpu_time` alone, as before: that
  start-up, a fixed cost per job, then scales with the tasks;
- conversion: CPU seconds per compressed GB of raw trace, from bench/bench_convert.py's
  whole conversion in one process over its real-size task_usage part (129.5 MB) and its
  task_events (23.2 MB), the mean of two runs (--convert-seconds-per-gb sets one rate for
  both traces). The rate depends on how much of the part the selection keeps: the writing of
  the jobs' files and the windows' gathering follow the kept rows. Google:
  `single_process_cpu_seconds_per_gb_full_selection_lookups` with `--min-tasks 385`, 55.0:
  the part keeps 20 jobs (3% of its rows), about the full selection's 17 a part (8,425 jobs
  from 500 parts), and its kept-key searches are charged at the full selection's table
  sizes (1.1 M tasks, 8,425 jobs). At the bench's default selection the part keeps 914 jobs,
  81% of its rows, and costs 91.4 a GB, the rate this projection charged Google before.
  Alibaba: that 91.4 (its conversion, `convert_alibaba`, not measured at its selection's
  share);
- per submitted job start-up: --startup-seconds, CPU seconds paid once per submitted job
  (prediction jobs grouped --group at a time). Default 2.6 s: measured on SLURM
  (docs/cluster.md, "Cost per submitted job": the CPU of a submitted job's own Snakemake
  start-up, 2.3-2.8 s user + system over 3 runs), replacing the 5-8 s wall-clock readings taken
  through cluster-generic on a loaded machine (bench/job_overhead.py).

Assumptions (printed with the result): the prediction's cost beyond the one-time imports is
linear in the number of tasks (the real Google selection has 1.1 M tasks in 8,425 jobs, 131
per job; the synthetic jobs have more). How cost per job scales is measured, not assumed, in
`cost_per_job_fit`: a least-squares fit of log(replay seconds per job, jobs.parquet `seconds`
summed over the methods, wall clock) on log(n_tasks) and log(n_checkpoints), over the jobs
with a checkpoint, each shard's first --fit-skip of them left out (the methods' imports land
there); `prediction_if_cost_per_job_follows_fit` rescales each measured job to the full run's
tasks per job by that fit's task exponent (its checkpoints kept), against the linear rescaling
the headline uses, and applies the ratio to the prediction's per-task part. An exponent below
1 means cost per job falls slower than the tasks, so the linear headline underestimates the
real selection's smaller jobs; above 1, it overestimates. Alibaba's "1 M" (paper, Sec. 6) is
read as instances, i.e. our tasks; the same per-task and per-GB costs hold on real rows;
downloads (41 GB + 20 GB) are network-bound and left out; wall time on N cores = sum over
stages of max(stage CPU / N, the stage's longest single job), i.e. perfect packing within a
stage.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

FULL = {
    "google": {
        "tasks": 1_100_000,
        "jobs": 8425,
        "shards": 84,
        "raw_gb": 41.0,
        # bench/bench_convert.py --min-tasks 385: 54.0 and 56.0 (module docstring)
        "convert_seconds_per_gb": 55.0,
        "conversion_jobs_today": 1,
        "conversion_jobs_scattered": 1000,
    },
    "alibaba": {
        "tasks": 1_000_000,
        "jobs": 10_000,
        "shards": 100,
        "raw_gb": 20.0,
        # bench/bench_convert.py's default selection (13.95 CPU s over 0.1527 GB)
        "convert_seconds_per_gb": 13.95 / 0.1527,
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
                "predict_work": {},
                "predict_jobs": [],
                "simulate": {},
                "policies": {},
                "evaluate": None,
                "rule_startups": [],
            },
        )
        startups = entry["rule_startups"]
        for method_dir in sorted((workdir / "benchmarks" / "predict" / dataset).iterdir()):
            seconds, shard_tasks, shards = 0.0, 0, 0
            for tsv in sorted(method_dir.glob("shard-*.tsv")):
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
                shards += 1
                rows = pd.read_parquet(
                    jobs, columns=["job_id", "n_tasks", "n_checkpoints", "seconds"]
                )
                shard_tasks += int(rows["n_tasks"].sum())
                entry["predict_jobs"].append(rows.assign(method=method_dir.name, shard=tsv.stem))
            entry["predict"][method_dir.name] = seconds / shard_tasks
            entry["predict_work"][method_dir.name] = (seconds, shards, shard_tasks)
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


def predict_rates(rate: dict, imports: dict[str, float]) -> dict[str, float]:
    """Each method's prediction CPU seconds per task with its one-time cost `imports[method]`
    taken out of each of its measured shards' work (paid once per rule job instead)."""
    return {
        method: max(0.0, work - shards * imports.get(method, 0.0)) / tasks
        for method, (work, shards, tasks) in rate["predict_work"].items()
    }


def per_task_and_fixed(sizes: list[float], tile: int, tasks: int) -> tuple[float, float]:
    """A job's CPU seconds per task and its fixed CPU seconds, from its work on `tasks` tasks
    and on `tile` times them: the difference is the cost of (tile - 1) x `tasks` tasks."""
    small, large = sizes
    per_task = max(large - small, 0.0) / ((tile - 1) * tasks)
    return per_task, max(small - per_task * tasks, 0.0)


def stage_costs(entry: dict, tasks: int) -> dict:
    """`per_task_and_fixed` of each job of a --stage-scaling entry (one dataset's): the
    evaluation's under "evaluate" (when measured), each method's simulation under
    "simulate"."""
    costs: dict = {
        "simulate": {
            method: per_task_and_fixed(sizes, entry["tile"], tasks)
            for method, sizes in entry.get("simulate", {}).items()
        }
    }
    if "evaluate" in entry:
        costs["evaluate"] = per_task_and_fixed(entry["evaluate"], entry["tile"], tasks)
    return costs


def full_size_job(run_per_task: float, costs: tuple[float, float] | None, full_tasks: int) -> float:
    """A simulation or evaluation job's CPU seconds at `full_tasks`: its run's cost per task
    scaled, or, measured at two sizes, `costs` (per task, fixed)."""
    if costs is None:
        return run_per_task * full_tasks
    per_task, fixed = costs
    return per_task * full_tasks + fixed


def project(
    rates: dict,
    cores: list[int],
    convert_per_gb: float | None,
    startup: float,
    group: int,
    imports: dict[str, dict[str, float]] | None = None,
    per_task_scale: dict[str, float] | None = None,
    scaling: dict[str, dict] | None = None,
) -> dict:
    """The full runs' CPU and wall time. `imports`: per family, each method's one-time CPU per
    prediction process, charged once per prediction rule job (none: every cost per task);
    `per_task_scale`: per family, a factor on the prediction's per-task part (a sensitivity);
    `scaling`: per family, bench/stage_cpu.py --scaling's entry of its dataset (the evaluation's
    and the simulation jobs' work at the run's size and at `tile` times it)."""
    result = {}
    for family, full in FULL.items():
        if family not in rates:
            continue
        rate = rates[family]
        # the trace's conversion rate, unless one is given for both
        per_gb = full["convert_seconds_per_gb"] if convert_per_gb is None else convert_per_gb
        # each rule job's own Python start-up (0 when measured within the rates)
        rule_startup = statistics.median(rate["rule_startups"]) if rate["rule_startups"] else 0.0
        methods = sorted(rate["predict"])
        method_imports = (imports or {}).get(family, {})
        scale = (per_task_scale or {}).get(family, 1.0)
        per_task = {m: r * scale for m, r in predict_rates(rate, method_imports).items()}
        import_cpu = sum(method_imports.get(m, 0.0) for m in methods) * full["shards"]
        by_method = {
            m: per_task[m] * full["tasks"] + method_imports.get(m, 0.0) * full["shards"]
            for m in methods
        }
        predict_cpu = sum(per_task[m] for m in methods) * full["tasks"] + import_cpu
        slowest = max(by_method.values()) / full["shards"]
        # the simulation's and the evaluation's jobs at full size: per task as in WORKDIR, or,
        # measured at two sizes (--stage-scaling), a cost per task and a fixed cost per job
        measured = stage_costs((scaling or {}).get(family, {}), rate["tasks_measured"])
        simulate_jobs = {
            method: full_size_job(run_per_task, measured["simulate"].get(method), full["tasks"])
            for method, run_per_task in rate["simulate"].items()
        }
        predict_jobs = len(methods) * full["shards"]
        stages = {
            # name: (CPU seconds, longest single job in seconds, submitted jobs)
            "conversion (one job, before scatter-gather)": (
                per_gb * full["raw_gb"],
                per_gb * full["raw_gb"],
                1,
            ),
            "prediction": (
                predict_cpu + rule_startup * predict_jobs,
                slowest + rule_startup,
                math.ceil(predict_jobs / group),
            ),
            # one simulation job per method; methods not (yet) simulated in WORKDIR cost the
            # mean of those that were
            "simulation": (
                sum(simulate_jobs.values()) / len(simulate_jobs) * len(methods)
                + rule_startup * len(methods),
                max(simulate_jobs.values(), default=0.0) + rule_startup,
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
            evaluate_job = full_size_job(rate["evaluate"], measured.get("evaluate"), full["tasks"])
            stages["evaluation"] = (evaluate_job + rule_startup, evaluate_job + rule_startup, 1)
        if full["conversion_jobs_scattered"] > 1:
            per_part = per_gb * full["raw_gb"] / full["conversion_jobs_scattered"]
            scattered = (
                "conversion (one job per part)",
                (per_gb * full["raw_gb"], per_part, full["conversion_jobs_scattered"]),
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
            "slowest_method": max(by_method, key=by_method.get),
            "rule_job_startup_seconds": round(rule_startup, 3),
            "prediction_imports_cpu_hours": round(import_cpu / 3600, 3),
            "prediction_cpu_hours_by_method": {
                m: round(by_method[m] / 3600, 3)
                for m in sorted(methods, key=by_method.get, reverse=True)
            },
            "today": today,
        }
        if scattered:
            alt = {k: v for k, v in stages.items() if not k.startswith("conversion")}
            alt[scattered[0]] = scattered[1]
            entry["with_scattered_conversion"] = totals(alt)
        result[family] = entry
    return result


def cost_per_job_fit(rate: dict, full: dict, skip: int) -> dict | None:
    """How replay seconds per job (summed over the methods) scale with a job's tasks and
    checkpoints: log(seconds) = a + b log(n_tasks) + c log(n_checkpoints), least squares over
    the jobs with a checkpoint, each shard's first `skip` of them left out (where the methods'
    one-time imports land). `per_task_scale`: the jobs' seconds rescaled to the full run's
    tasks per job by (tasks / n_tasks) ** b, against the linear rescaling (seconds / tasks *
    tasks per job), as a ratio."""
    if not rate["predict_jobs"]:
        return None
    rows = pd.concat(rate["predict_jobs"], ignore_index=True)
    rows = rows[rows["n_checkpoints"] > 0]
    rows = rows[rows.groupby(["method", "shard"]).cumcount() >= skip]
    jobs = rows.groupby(["shard", "job_id"], sort=False).agg(
        seconds=("seconds", "sum"),
        n_tasks=("n_tasks", "first"),
        n_checkpoints=("n_checkpoints", "first"),
    )
    jobs = jobs[jobs["seconds"] > 0]
    if len(jobs) < 4:
        return None
    design = np.column_stack(
        [np.ones(len(jobs)), np.log(jobs["n_tasks"]), np.log(jobs["n_checkpoints"])]
    )
    target = np.log(jobs["seconds"].to_numpy())
    coef, *_ = np.linalg.lstsq(design, target, rcond=None)
    residual = target - design @ coef
    r2 = 1 - residual.var() / target.var()
    tasks_per_job = full["tasks"] / full["jobs"]
    seconds, n_tasks = jobs["seconds"].to_numpy(), jobs["n_tasks"].to_numpy()
    by_fit = np.mean(seconds * (tasks_per_job / n_tasks) ** coef[1])
    linear = seconds.sum() / n_tasks.sum() * tasks_per_job
    return {
        "jobs_fitted": len(jobs),
        "first_jobs_left_out_per_shard": skip,
        "exponent_n_tasks": round(float(coef[1]), 3),
        "exponent_n_checkpoints": round(float(coef[2]), 3),
        "r_squared": round(float(r2), 3),
        "measured_tasks_per_job": round(float(n_tasks.mean()), 1),
        "full_tasks_per_job": round(tasks_per_job, 1),
        "per_task_scale": round(float(by_fit / linear), 3),
    }


def first_jobs_excess(rate: dict, skip: int) -> dict[str, float]:
    """A check of the measured import seconds against the run: per method, the mean over its
    shards of the replay seconds (jobs.parquet, wall clock) of the shard's first `skip` jobs
    with a checkpoint, where the imports land, less `skip` times the median of the others."""
    if not rate["predict_jobs"]:
        return {}
    rows = pd.concat(rate["predict_jobs"], ignore_index=True)
    rows = rows[rows["n_checkpoints"] > 0]
    first = rows.groupby(["method", "shard"]).cumcount() < skip
    excess = (
        rows[first].groupby(["method", "shard"])["seconds"].sum()
        - skip * rows[~first].groupby(["method", "shard"])["seconds"].median()
    )
    return {m: round(float(v), 3) for m, v in excess.groupby(level="method").mean().items()}


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
    parser.add_argument(
        "--convert-seconds-per-gb",
        type=float,
        default=None,
        help="conversion CPU s per compressed GB for both traces (default: each trace's own)",
    )
    parser.add_argument(
        "--startup-seconds", type=float, default=2.6, help="CPU s per submitted job (SLURM)"
    )
    parser.add_argument("--group", type=int, default=24, help="prediction jobs per submitted job")
    parser.add_argument(
        "--import-seconds",
        type=Path,
        help="bench/import_cpu.py's JSON: each method's one-time CPU per prediction process",
    )
    parser.add_argument(
        "--stage-scaling",
        type=Path,
        help="bench/stage_cpu.py --scaling's JSON: the evaluation's and simulation's jobs at two "
        "sizes (without it: their cost per task in WORKDIR)",
    )
    parser.add_argument(
        "--fit-skip", type=int, default=3, help="first jobs per shard left out of the fit"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "out" / "project_cost.json",
        help="where the JSON goes",
    )
    args = parser.parse_args()
    rates = measured_rates(args.workdir.resolve(), args.configfile)
    measured = json.loads(args.import_seconds.read_text()) if args.import_seconds else {}
    imports = {family: measured.get(rate["dataset"], {}) for family, rate in rates.items()}
    for family, rate in rates.items():
        missing = sorted(set(rate["predict"]) - set(imports[family]))
        if args.import_seconds and missing:
            print(f"{rate['dataset']}: no import_s for {', '.join(missing)}: 0, all per task")
    fits = {
        family: cost_per_job_fit(rate, FULL[family], args.fit_skip)
        for family, rate in rates.items()
    }
    sizes = json.loads(args.stage_scaling.read_text()) if args.stage_scaling else {}
    scaling = {family: sizes.get(rate["dataset"], {}) for family, rate in rates.items()}
    for family, rate in rates.items():
        unmeasured = sorted(set(rate["simulate"]) - set(scaling[family].get("simulate", {})))
        if args.stage_scaling and unmeasured:
            print(f"{rate['dataset']}: simulation of {', '.join(unmeasured)} charged per task")
    common = (rates, args.cores, args.convert_seconds_per_gb, args.startup_seconds, args.group)
    projection = project(*common, imports, None, scaling)
    sensitivity = project(
        *common, imports, {f: fit["per_task_scale"] for f, fit in fits.items() if fit}, scaling
    )
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
            "convert_seconds_per_gb": {
                family: round(
                    full["convert_seconds_per_gb"]
                    if args.convert_seconds_per_gb is None
                    else args.convert_seconds_per_gb,
                    1,
                )
                for family, full in FULL.items()
            },
            "startup_seconds_per_submitted_job": args.startup_seconds,
            "predict_group": args.group,
            "full_runs": FULL,
        },
        # the evaluation's and the simulation jobs' (CPU s per task, fixed CPU s per job),
        # from their work at two sizes (--stage-scaling)
        "stage_per_task_and_fixed_seconds": {
            family: stage_costs(entry, rates[family]["tasks_measured"])
            for family, entry in scaling.items()
            if entry
        },
        # each method's one-time CPU per prediction process (--import-seconds)
        "import_seconds_per_rule_job": {
            family: {m: imports[family].get(m, 0.0) for m in sorted(rate["predict"])}
            for family, rate in rates.items()
        },
        "first_jobs_excess_seconds": {
            family: first_jobs_excess(rate, args.fit_skip) for family, rate in rates.items()
        },
        "cost_per_job_fit": fits,
        "prediction_if_cost_per_job_follows_fit": {
            family: {
                "prediction_cpu_hours": entry["stages_cpu_hours"]["prediction"],
                "cpu_hours": entry["today"]["cpu_hours"],
            }
            for family, entry in sensitivity.items()
            if fits.get(family)
        },
        "projection": projection,
        "projection_imports_per_task": project(*common),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    for family, entry in projection.items():
        old = result["projection_imports_per_task"][family]
        print(
            f"{family}: {entry['today']['cpu_hours']} CPU-h (prediction "
            f"{entry['stages_cpu_hours']['prediction']}, of which imports once per rule job "
            f"{entry['prediction_imports_cpu_hours']}); imports charged per task: "
            f"{old['today']['cpu_hours']} (prediction {old['stages_cpu_hours']['prediction']})"
        )
        if fits.get(family):
            fit, alt = fits[family], result["prediction_if_cost_per_job_follows_fit"][family]
            print(
                f"{family}: cost per job ~ n_tasks^{fit['exponent_n_tasks']} "
                f"n_checkpoints^{fit['exponent_n_checkpoints']} (R2 {fit['r_squared']}, "
                f"{fit['jobs_fitted']} jobs); at {fit['full_tasks_per_job']} tasks per job the "
                f"per-task part x{fit['per_task_scale']}: {alt['cpu_hours']} CPU-h "
                f"(prediction {alt['prediction_cpu_hours']})"
            )


if __name__ == "__main__":
    main()
