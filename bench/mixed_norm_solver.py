"""The mixed-norm solver's inner budget: liblinear epochs per alternation against time,
alternations and the objective reached (a benchmark, not a test). After a run that
converted the dataset, from the run's folder:

    python bench/mixed_norm_solver.py resources/converted/google-synthetic google-2011 user

It takes the launch protocol's training rows at a 50% split (tasks of jobs finished by the
median task start; standardised, stragglers oversampled as the protocol does) and fits each
mixed-norm formulation with liblinear's `max_iter` (epochs per alternation) in 200, 500, 2000 and 20000. Prints one
line per fit (CPU seconds, alternations, the formulation's own objective, share flagged) and
writes bench/out/mixed_norm_solver.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from stragglers.formats.datasets import machine_feature_category
from stragglers.launch.crossjob import (
    LaunchSettings,
    Standardiser,
    add_labels,
    oversample_stragglers,
)
from stragglers.launch.mtl import MultiTaskSVM
from stragglers.launch.tasks import load_launch_tasks

BUDGETS = (200, 500, 1000, 2000, 20000)
FORMULATIONS = ("fps", "fgs", "ffs1", "ffs2")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("converted_dir")
    parser.add_argument("kind")
    parser.add_argument("workload")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    tasks, features = load_launch_tasks(args.converted_dir, args.kind, args.workload)
    tasks = add_labels(tasks, LaunchSettings(workload=args.workload, straggler_quantile=0.9))
    split = tasks["task_start"].quantile(0.5)
    train = tasks[tasks["job_end"] <= split]
    X = Standardiser(train[features].to_numpy(float))(train[features].to_numpy(float))
    straggler = train["straggler"].to_numpy(bool)
    picked = oversample_stragglers(straggler, np.random.default_rng(args.seed))
    node, workload = train["node"].to_numpy()[picked], train["workload"].to_numpy()[picked]
    categories = [machine_feature_category(name) for name in features]
    print(
        f"{len(train)} training tasks ({len(picked)} after oversampling), {len(features)} features"
    )
    rows = []
    for name in FORMULATIONS:
        for budget in BUDGETS:
            started = time.process_time()
            model = MultiTaskSVM(
                name, seed=args.seed, feature_categories=categories, max_iter=budget
            )
            model.fit(X[picked], straggler[picked], node, workload)
            seconds = time.process_time() - started
            objective = model.objective(X[picked], straggler[picked], node, workload)
            flagged = float(
                model.predict(X, train["node"].to_numpy(), train["workload"].to_numpy()).mean()
            )
            rows.append(
                {
                    "formulation": name,
                    "inner_max_iter": budget,
                    "cpu_seconds": round(seconds, 3),
                    "alternations": model.n_iter_,
                    "objective": objective,
                    "flagged_share": flagged,
                }
            )
            print(
                f"{name:5s} inner {budget:6d}: {seconds:7.2f} s, {model.n_iter_:3d} alternations, "
                f"objective {objective:.4f}, flags {flagged:.3f}"
            )
    out = Path(__file__).resolve().parent / "out" / "mixed_norm_solver.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"converted_dir": args.converted_dir, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
