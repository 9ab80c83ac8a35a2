"""Cost of the time-aware scoring (stragglers/evaluate/timing.py) beside the existing metrics.

    python bench/bench_scoring.py RUN_DIR    # RUN_DIR: a finished run's --directory

For every dataset and method under RUN_DIR/results/<dataset>/predictions, times
evaluate.job_metrics + f1_over_time (existing) against timing_job_metrics + lead_over_time +
flag_leads (added), then the lead figure per dataset. Prints JSON lines.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from stragglers.evaluate import timing
from stragglers.evaluate.metrics import f1_over_time, job_metrics, load_predictions
from stragglers.report.tables import plot_lead_distribution


def main(run_dir: str) -> None:
    results = Path(run_dir) / "results"
    for dataset_dir in sorted(p for p in results.iterdir() if (p / "predictions").is_dir()):
        existing = added = 0.0
        leads, metrics = [], []
        methods = sorted((dataset_dir / "predictions").iterdir())
        for method_dir in methods:
            tasks, jobs = load_predictions(
                sorted(map(str, method_dir.glob("*.tasks.parquet"))),
                sorted(map(str, method_dir.glob("*.jobs.parquet"))),
            )
            began = time.perf_counter()
            metrics.append(job_metrics(tasks, jobs))
            f1_over_time(tasks, jobs, 10)
            middle = time.perf_counter()
            timing.timing_job_metrics(tasks, jobs, validated=True)
            timing.lead_over_time(tasks, jobs, 10, validated=True)
            leads.append(timing.flag_leads(tasks, jobs, validated=True))
            existing += middle - began
            added += time.perf_counter() - middle
        with tempfile.TemporaryDirectory() as scratch:
            began = time.perf_counter()
            plot_lead_distribution(
                pd.concat(leads), pd.concat(metrics), Path(scratch) / "lead.png", dataset_dir.name
            )
            figure = time.perf_counter() - began
        print(
            json.dumps(
                {
                    "dataset": dataset_dir.name,
                    "methods": len(methods),
                    "existing_metrics_s": round(existing, 3),
                    "timing_metrics_s": round(added, 3),
                    "lead_figure_s": round(figure, 3),
                }
            )
        )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
