"""The speed figures of two benchmarks: bench/reference_script.py's script-against-pipeline
ratios and bench/project_cost.py's per-task rates from the rules' own work."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_script_speed_sums_the_detectors_per_job():
    """run_od.py's whole run of a job against the fourteen detectors' replays summed, run_ts.py
    against NURD at its alpha; a job the script raised on is left out."""
    bench = _bench("reference_script")
    rows = []
    for job, script_cpu in (("a", 40.0), ("b", np.nan)):
        for i, method in enumerate(bench.OD_METHODS.values()):
            rows.append(
                {
                    "dataset": "d",
                    "job_id": job,
                    "method": method,
                    "alpha": np.nan,
                    "pipeline_cpu_s": 0.25 if i % 2 else 0.0,
                    "script_job_cpu_s": script_cpu,
                }
            )
        rows.append(
            {
                "dataset": "d",
                "job_id": job,
                "method": "NURD",
                "alpha": 0.5,
                "pipeline_cpu_s": 0.5,
                "script_job_cpu_s": 4.0 if job == "a" else np.nan,
            }
        )
    table = bench.speed(pd.DataFrame(rows))
    assert list(table["job_id"]) == ["a", "a"]
    od, nurd = table.iloc[0], table.iloc[1]
    assert od["pipeline_cpu_s"] == 7 * 0.25 and od["ratio"] == 40.0 / 1.75 and od["target_met"]
    assert nurd["alpha"] == 0.5 and nurd["ratio"] == 8.0 and not nurd["target_met"]
    text = "\n".join(bench.speed_summary(table))
    assert "| d | run_ts.py / NURD | 0.5 | 1 | 4.0 | 0.5 | 8.0 | 8.0 | 8.0 | 0 of 1 |" in text


def test_project_cost_takes_the_rules_work_and_their_start_up(tmp_path):
    """The per-task rate comes from the `rule cpu:` line's work; the rest of the benchmark's
    CPU is the job's start-up, collected to be paid once per job; no line: the benchmark."""
    bench = _bench("project_cost")
    benchmark = tmp_path / "shard-0.tsv"
    benchmark.write_text("s\tcpu_time\n3.0\t2.5\n")
    log = tmp_path / "shard-0.log"
    log.write_text("x INFO stragglers.io: rule cpu: start_up_s=0.300 work_s=2.000\n")
    startups: list[float] = []
    assert bench.work_cpu(benchmark, log, startups) == 2.0
    assert startups == [0.5]
    assert bench.work_cpu(benchmark, tmp_path / "missing.log", startups) == 2.5
    assert startups == [0.5]
