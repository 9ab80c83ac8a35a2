"""CPU seconds of the simulation and evaluation jobs, run in this process as their rules run
them, on a finished run's predictions (`results/<dataset>/predictions/`): a `simulate_method`
job (one method's completion-time simulation and mitigation policies) or the
`evaluate_dataset` job (every method's predictions of one dataset). With `--profile FILE`,
each job's cProfile is written to FILE.<rule>.<dataset>[.<method>] and its heaviest functions
printed.

    python bench/stage_cpu.py simulate google-synthetic NURD Oracle [--out DIR]
    python bench/stage_cpu.py simulate google-synthetic all
    python bench/stage_cpu.py evaluate alibaba-synthetic --profile scratch/evaluate
    python bench/stage_cpu.py evaluate google-synthetic NURD   # the job over one method only
    python bench/stage_cpu.py simulate google-synthetic NURD Oracle --tile 176

With `--tile N` a `simulate_method` job runs at N times the run's size: each method's
prediction files are first written N times over (job ids suffixed `-t<k>`, shards kept) under
--out, then each job runs in a fresh process (`--predictions` on those files), measured by the
operating system: its CPU seconds and peak RSS, start-up included. 176 copies of
google-synthetic's shard (6,259 tasks) are 1.1 M tasks, the full Google selection's size
(bench/project_cost.py).

With `--scaling FILE` (and `--tile N`, N > 1) each job, the `evaluate_dataset` job or each
method's `simulate_method` job, runs twice, each in a fresh process: on the run's predictions
and on their N copies. FILE (JSON, merged with what it holds) gets the work's CPU seconds at
both sizes, per dataset: `{dataset: {"tile": N, "evaluate": [run, N copies], "simulate":
{method: [run, N copies]}}}`. Their difference is the cost of (N - 1) times the run's tasks;
what is left of the first is the job's fixed cost (its figures, its lazy imports), paid once
per job at any size. bench/project_cost.py --stage-scaling FILE charges the two stages so.

    python bench/stage_cpu.py evaluate google-synthetic --tile 8 --scaling scratch/scaling.json
    python bench/stage_cpu.py simulate google-synthetic all --tile 8 --scaling scratch/scaling.json

One line per job: `rule dataset [method] cpu_s=...` (the rule's work, as the `work_s` of its
log's `rule cpu:` line: its function's `time.process_time`, lazy imports included, this
script's start-up and the rule's module not). Methods after the first share its lazy imports:
one method per call measures a job.
The outputs go to --out (default scratch/stage_cpu), named as the rules name theirs.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # before numpy loads: as Snakemake sets them

import argparse  # noqa: E402
import cProfile  # noqa: E402
import json  # noqa: E402
import pstats  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import yaml  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_convert import run_measured  # noqa: E402

from stragglers.formats.dataset_spec import dataset_specs  # noqa: E402
from stragglers.rules import rule_function  # noqa: E402


def _prediction_files(
    dataset: str, method: str, part: str, n_shards: int, root: str = "results"
) -> list[str]:
    return [
        f"{root}/{dataset}/predictions/{method}/shard-{shard}.{part}.parquet"
        for shard in range(n_shards)
    ]


def tile_predictions(
    dataset: str, method: str, n_shards: int, copies: int, root: Path, source: str = "results"
) -> None:
    """`copies` copies of each of `method`'s prediction files of `dataset` (under `source`) in
    one file, job ids suffixed `-t<k>`, under `root` as under results/."""
    import pandas as pd

    for part in ("tasks", "jobs"):
        for source_file, target in zip(
            _prediction_files(dataset, method, part, n_shards, source),
            _prediction_files(dataset, method, part, n_shards, str(root)),
            strict=True,
        ):
            frame = pd.read_parquet(source_file)
            tiled = pd.concat(
                [frame.assign(job_id=frame["job_id"] + f"-t{k}") for k in range(copies)],
                ignore_index=True,
            )
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            tiled.to_parquet(target, index=False)


def simulate_job(
    config: dict, specs: dict, dataset: str, method: str, out: Path, root: str = "results"
) -> Any:
    """Rule simulate_method's work for `method`'s predictions of `dataset` (under `root`)."""
    from stragglers.rules.simulate import simulate_method

    simulation = config["simulation"]
    policies = simulation.get("policies", {})
    n_shards = specs[dataset].n_shards
    for folder in ("simulation", "policies"):
        (out / dataset / folder).mkdir(parents=True, exist_ok=True)
    return simulate_method(
        tasks=_prediction_files(dataset, method, "tasks", n_shards, root),
        jobs=_prediction_files(dataset, method, "jobs", n_shards, root),
        simulation=str(out / dataset / "simulation" / f"{method}.parquet"),
        policies=str(out / dataset / "policies" / f"{method}.parquet"),
        dataset=dataset,
        method=method,
        replay=specs[dataset].replay,
        repeats=simulation["repeats"],
        machines=simulation["machines"],
        seed=config["seed"],
        relaunch=simulation.get("relaunch", "from_flag"),
        resume_attempts=policies.get("resume_attempts", 2),
        kill_delay=policies.get("kill_delay"),
    )


def evaluate_job(
    config: dict, specs: dict, dataset: str, methods: list[str], out: Path, root: str = "results"
) -> Any:
    """Rule evaluate_dataset's work: every method's predictions of `dataset` (under `root`)."""
    from stragglers.rules.evaluate import evaluate_dataset

    n_shards = specs[dataset].n_shards
    folder = out / dataset / "evaluation"
    folder.mkdir(parents=True, exist_ok=True)
    (out / dataset / "figures").mkdir(parents=True, exist_ok=True)
    return evaluate_dataset(
        task_files=[
            p for m in methods for p in _prediction_files(dataset, m, "tasks", n_shards, root)
        ],
        job_files=[
            p for m in methods for p in _prediction_files(dataset, m, "jobs", n_shards, root)
        ],
        job_metrics=str(folder / "job_metrics.csv"),
        f1_per_job=str(folder / "f1_over_time_per_job.csv"),
        f1_mean=str(folder / "f1_over_time.csv"),
        figure=str(out / dataset / "figures" / "f1_over_time.png"),
        leads=str(folder / "leads.csv"),
        lead_figure=str(out / dataset / "figures" / "lead.png"),
        dataset=dataset,
        n_points=config["evaluation"]["f1_time_points"],
        protocol=config["replay"].get("protocol", "causal"),
    )


def work_cpu_in_fresh_process(arguments: list[str]) -> float:
    """This script run with `arguments` (one job) in a fresh process: its job's work CPU
    seconds, from its `cpu_s=` line."""
    printed = run_measured([__file__, *arguments])["stdout"]
    found = re.findall(r" cpu_s=([0-9.]+)$", printed, flags=re.M)
    if len(found) != 1:
        raise RuntimeError(f"stage_cpu: expected one job's cpu_s line, got: {printed!r}")
    return float(found[0])


def measure_scaling(
    rule: str, dataset: str, methods: list[str], args: argparse.Namespace, n_shards: int
) -> list[float] | dict[str, list[float]]:
    """Each job's work CPU on the run's predictions and on `args.tile` copies of them (the
    evaluation: one job over `methods`; the simulation: one job per method)."""
    out = Path(args.out)
    tiled = out / "tiled"
    for method in methods:
        tile_predictions(dataset, method, n_shards, args.tile, tiled, args.predictions)
    common = ["--configfile", args.configfile, "--out", str(out)]

    def sizes(job_methods: list[str], job: str) -> list[float]:
        found = [
            work_cpu_in_fresh_process([rule, dataset, *job_methods, *common, "--predictions", root])
            for root in (args.predictions, str(tiled))
        ]
        print(f"{rule} {dataset} {job}: work cpu_s {found} (x1, x{args.tile})", flush=True)
        return found

    if rule == "evaluate":
        return sizes(methods, f"{len(methods)} methods")
    return {method: sizes([method], method) for method in methods}


def _timed(label: str, profile_path: str | None, work) -> None:
    profile = cProfile.Profile() if profile_path else None
    start = time.process_time()
    if profile:
        profile.enable()
    work()
    if profile:
        profile.disable()
    print(f"{label} cpu_s={time.process_time() - start:.3f}", flush=True)
    if profile:
        path = f"{profile_path}.{label.replace(' ', '.')}"
        profile.dump_stats(path)
        pstats.Stats(path).sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rule", choices=["simulate", "evaluate"])
    parser.add_argument("dataset")
    parser.add_argument("methods", nargs="*", help="methods, or `all` (evaluate: all if none)")
    parser.add_argument("--configfile", default="config/config.yaml")
    parser.add_argument("--out", default="scratch/stage_cpu", help="where the outputs go")
    parser.add_argument("--profile", help="cProfile each job to PROFILE.<rule>.<dataset>...")
    parser.add_argument(
        "--predictions", default="results", help="the folder holding <dataset>/predictions/"
    )
    parser.add_argument(
        "--tile",
        type=int,
        default=1,
        help="simulate: each job at this many times the run's size, in a fresh process",
    )
    parser.add_argument(
        "--scaling",
        type=Path,
        help="JSON: each job's work CPU at the run's size and at --tile times it",
    )
    args = parser.parse_args()
    config = yaml.safe_load(Path(args.configfile).read_text())
    specs = dataset_specs(config, {})
    out = Path(args.out)
    methods = list(config["methods"])
    # evaluate: every method unless some are named; simulate: those named, or `all`
    every = args.methods == ["all"] or (args.rule == "evaluate" and not args.methods)
    chosen = methods if every else args.methods
    if args.scaling:
        if args.tile < 2:
            parser.error("--scaling needs --tile N with N >= 2")
        measured = measure_scaling(
            args.rule, args.dataset, chosen, args, specs[args.dataset].n_shards
        )
        table = json.loads(args.scaling.read_text()) if args.scaling.is_file() else {}
        entry = table.setdefault(args.dataset, {})
        if entry.get("tile", args.tile) != args.tile:
            entry.clear()  # a new tile factor: the other stage's sizes are not comparable
        entry["tile"] = args.tile
        if args.rule == "evaluate":
            entry["evaluate"] = measured
        else:
            entry.setdefault("simulate", {}).update(measured)
        args.scaling.parent.mkdir(parents=True, exist_ok=True)
        args.scaling.write_text(json.dumps(table, indent=2, sort_keys=True) + "\n")
        return
    # the rule's module is imported before its work starts, as scripts/run.py does
    rule_function("evaluate_dataset" if args.rule == "evaluate" else "simulate_method")
    if args.rule == "evaluate":
        _timed(
            f"evaluate {args.dataset}",
            args.profile,
            lambda: evaluate_job(config, specs, args.dataset, chosen, out, args.predictions),
        )
        return
    if args.tile > 1:
        root = out / "tiled"
        for method in chosen:
            tile_predictions(
                args.dataset,
                method,
                specs[args.dataset].n_shards,
                args.tile,
                root,
                args.predictions,
            )
            measured = run_measured(
                [__file__, "simulate", args.dataset, method, "--configfile", args.configfile]
                + ["--out", str(out), "--predictions", str(root)]
            )
            print(
                f"{measured['stdout']}simulate {args.dataset} {method} x{args.tile}: process "
                f"cpu_s={measured['cpu_seconds']:.2f} peak_rss_mb={measured['peak_rss_mb']}",
                flush=True,
            )
        return
    for method in chosen:
        _timed(
            f"simulate {args.dataset} {method}",
            args.profile,
            lambda method=method: simulate_job(
                config, specs, args.dataset, method, out, args.predictions
            ),
        )


if __name__ == "__main__":
    main()
