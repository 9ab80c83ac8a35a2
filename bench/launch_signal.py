"""How much straggler signal each launch-time column carries on its own: the ROC AUC of every
`launch_machine_*` column against the launch stage's labels (0.5 = none), per dataset.

    python bench/launch_signal.py resources/converted/<dataset> <kind> [workload] [label]

Run after `snakemake` (it reads the converted jobs). The launch-time columns and labels are
those of docs/methods.md, "Launch-time, cross-job protocol".
"""

from __future__ import annotations

import sys

import numpy as np
from sklearn.metrics import roc_auc_score

from stragglers.launch.crossjob import add_labels
from stragglers.launch.tasks import load_launch_tasks
from stragglers.rules.launch import launch_settings


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    converted, kind = argv[0], argv[1]
    config = {}
    if len(argv) > 2:
        config["workload"] = {kind: argv[2]}
    if len(argv) > 3:
        config["label"] = argv[3]
    settings = launch_settings(config, kind, straggler_quantile=0.9)
    tasks, features = load_launch_tasks(converted, kind, settings.workload)
    tasks = add_labels(tasks, settings)
    print(
        f"{converted}: {len(tasks)} tasks, {tasks['straggler'].mean():.3f} stragglers ({settings.label})"
    )
    for column in features:
        values = tasks[column].to_numpy(float)
        known = ~np.isnan(values)
        if np.unique(values[known]).size < 2:
            print(f"  {column:40s} constant or missing")
            continue
        print(f"  {column:40s} AUC {roc_auc_score(tasks['straggler'][known], values[known]):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
