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
import pstats  # noqa: E402
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


def tile_predictions(dataset: str, method: str, n_shards: int, copies: int, root: Path) -> None:
    """`copies` copies of each of `method`'s prediction files of `dataset` in one file, job ids
    suffixed `-t<k>`, under `root` as under results/."""
    import pandas as pd

    for part in ("tasks", "jobs"):
        for source, target in zip(
            _prediction_files(dataset, method, part, n_shards),
            _prediction_files(dataset, method, part, n_shards, str(root)),
            strict=True,
        ):
            frame = pd.read_parquet(source)
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


def evaluate_job(config: dict, specs: dict, dataset: str, methods: list[str], out: Path) -> Any:
    """Rule evaluate_dataset's work: every method's predictions of `dataset`."""
    from stragglers.rules.evaluate import evaluate_dataset

    n_shards = specs[dataset].n_shards
    folder = out / dataset / "evaluation"
    folder.mkdir(parents=True, exist_ok=True)
    (out / dataset / "figures").mkdir(parents=True, exist_ok=True)
    return evaluate_dataset(
        task_files=[p for m in methods for p in _prediction_files(dataset, m, "tasks", n_shards)],
        job_files=[p for m in methods for p in _prediction_files(dataset, m, "jobs", n_shards)],
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
    args = parser.parse_args()
    config = yaml.safe_load(Path(args.configfile).read_text())
    specs = dataset_specs(config, {})
    out = Path(args.out)
    methods = list(config["methods"])
    # the rule's module is imported before its work starts, as scripts/run.py does
    rule_function("evaluate_dataset" if args.rule == "evaluate" else "simulate_method")
    if args.rule == "evaluate":  # every method, or those named
        chosen = methods if args.methods in ([], ["all"]) else args.methods
        _timed(
            f"evaluate {args.dataset}",
            args.profile,
            lambda: evaluate_job(config, specs, args.dataset, chosen, out),
        )
        return
    chosen = methods if args.methods == ["all"] else args.methods
    if args.tile > 1:
        root = out / "tiled"
        for method in chosen:
            tile_predictions(args.dataset, method, specs[args.dataset].n_shards, args.tile, root)
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
