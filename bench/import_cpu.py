"""Each method's fixed CPU per prediction process: what rule `predict` pays once, in its first
job, on top of the jobs' own work (bench/project_cost.py charges it once per rule job).

    cd WORKDIR && python bench/import_cpu.py google-synthetic alibaba-synthetic [--methods M ...] [--out FILE]

WORKDIR is a finished run (its resources/converted/ and shard 0's jobs.parquet). Per dataset
and method, in a fresh process (threads as Snakemake gives a `threads: 1` job, as
bench/job_cpu.py sets them): first what the rule's start-up already holds (scripts/run.py
imports stragglers.rules.predict before run_rule starts the `work_s` clock), then, timed with
`time.process_time`, shard 0's first `--jobs` jobs that have a checkpoint replayed as rule
`predict` replays them (`replay_methods`, which imports the method registry, constructs the
method and fits it: the lazy imports of PyOD, scikit-learn, torch, xgboost, lifelines and
numba's cache loading happen there), then the same jobs replayed again in the same process.
The first replay minus the second is the process's one-time cost (`import_s`); the second is
the jobs' own work. With --repeats, the median over that many processes (a numba cache written
by the first process, a loaded machine). One JSON object {dataset: {method: import_s}} is
printed and written to --out.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # before numpy loads: as Snakemake sets them

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402


def first_jobs(dataset: str, n_jobs: int) -> list[str]:
    """Shard 0's first `n_jobs` jobs with a checkpoint, in the order the rule replays them."""
    import pandas as pd

    folder = Path("results") / dataset / "predictions"
    jobs = pd.read_parquet(next(folder.glob("*/shard-0.jobs.parquet")))
    return [str(j) for j in jobs.loc[jobs["n_checkpoints"] > 0, "job_id"].head(n_jobs)]


def child(dataset: str, method: str, job_ids: list[str], configfile: str) -> None:
    """In this fresh process: the rule's start-up imports, then the jobs replayed twice."""
    import yaml

    import stragglers.rules.predict  # noqa: F401  (rule predict's start-up: scripts/run.py)
    from stragglers.replay.core import dataset_replay
    from stragglers.replay.service import JobSelection, MethodRun, replay_methods

    config = yaml.safe_load(Path(configfile).read_text())
    entry = dict(config["methods"].get(method) or {})
    name = entry.pop("method", method)
    ds = config["datasets"][dataset]
    converted = Path("resources/converted") / dataset

    def replay() -> float:
        start = time.process_time()
        (_,) = replay_methods(
            converted,
            ds["kind"],
            [MethodRun(method, name, entry)],
            dataset=dataset,
            seed=config["seed"],
            replay=dataset_replay(config["replay"], ds),
            kill_delay=config["simulation"].get("policies", {}).get("kill_delay"),
            selection=JobSelection(shard=0, only_jobs=tuple(job_ids)),
        )
        return time.process_time() - start

    first = replay()
    again = replay()
    print(json.dumps({"first_s": first, "again_s": again}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--methods", nargs="*", help="default: every method shard 0 ran")
    parser.add_argument("--jobs", type=int, default=3, help="jobs replayed (with a checkpoint)")
    parser.add_argument("--repeats", type=int, default=1, help="processes per method (median)")
    parser.add_argument("--configfile", default="config/config.yaml")
    parser.add_argument("--out", type=Path, help="where the JSON goes")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        dataset, method, jobs = args.child
        child(dataset, method, json.loads(jobs), args.configfile)
        return
    result: dict = {}
    for dataset in args.datasets:
        folder = Path("results") / dataset / "predictions"
        methods = args.methods or sorted(p.name for p in folder.iterdir())
        jobs = json.dumps(first_jobs(dataset, args.jobs))
        for method in methods:
            command = [sys.executable, __file__, dataset, "--configfile", args.configfile]
            measured = []
            for _ in range(args.repeats):
                run = subprocess.run(
                    [*command, "--child", dataset, method, jobs],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                times = json.loads(run.stdout.strip().splitlines()[-1])
                measured.append(max(0.0, times["first_s"] - times["again_s"]))
                print(
                    f"{dataset} {method} first {times['first_s']:.3f} again {times['again_s']:.3f}",
                    file=sys.stderr,
                    flush=True,
                )
            import_s = statistics.median(measured)
            result.setdefault(dataset, {})[method] = round(import_s, 3)
            print(f"{dataset} {method} import_s={import_s:.3f}", file=sys.stderr, flush=True)
    text = json.dumps(result, indent=2) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
