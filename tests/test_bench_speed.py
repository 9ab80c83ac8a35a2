"""The speed figures of two benchmarks: bench/reference_script.py's script-against-pipeline
ratios and bench/project_cost.py's per-task rates from the rules' own work."""

from __future__ import annotations

import importlib.util
import statistics
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
                    "pipeline_tree_builder_cpu_s": 0.0,
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
                "pipeline_tree_builder_cpu_s": 0.4,
                "script_job_cpu_s": 4.0 if job == "a" else np.nan,
            }
        )
    table = bench.speed(pd.DataFrame(rows))
    assert list(table["job_id"]) == ["a", "a"]
    od, nurd = table.iloc[0], table.iloc[1]
    assert od["pipeline_cpu_s"] == 7 * 0.25 and od["ratio"] == 40.0 / 1.75 and od["target_met"]
    assert nurd["alpha"] == 0.5 and nurd["ratio"] == 8.0 and not nurd["target_met"]
    # growing the trees bounds NURD's ratio; the detectors grew none
    assert nurd["ratio_bound_same_trees"] == 4.0 / 0.4 and np.isnan(od["ratio_bound_same_trees"])
    text = "\n".join(bench.speed_summary(table))
    assert (
        "| d | run_ts.py / NURD | 0.5 | 1 | 4.0 | 0.5 | 8.0 | 8.0 | 8.0 | 0 of 1 | 0.4 | 10.0 |"
        in text
    )
    assert "| 1 of 1 | - | - |" in text


def test_reference_script_speed_per_job_and_method():
    """Beside the whole runs (level job), each (job, method) row's own model calls in the
    script against the pipeline's replay of that method (level method); the summary has a
    table per level."""
    bench = _bench("reference_script")
    od = list(bench.OD_METHODS.values())[:2]
    rows = [
        {"method": od[0], "alpha": np.nan, "script_cpu_s": 3.0, "pipeline_cpu_s": 0.25},
        {"method": od[1], "alpha": np.nan, "script_cpu_s": 1.0, "pipeline_cpu_s": 0.5},
        {"method": "NURD", "alpha": 0.0, "script_cpu_s": 6.0, "pipeline_cpu_s": 0.5},
        {"method": "GBTR", "alpha": np.nan, "script_cpu_s": np.nan, "pipeline_cpu_s": 0.5},
    ]
    frame = pd.DataFrame(rows).assign(
        dataset="d", job_id="a", script_job_cpu_s=20.0, pipeline_tree_builder_cpu_s=0.0
    )
    table = bench.speed(frame)
    jobs, methods = table[table["level"] == "job"], table[table["level"] == "method"]
    assert list(jobs["compared"]) == ["run_od.py / the 2 PyOD detectors", "run_ts.py / NURD"]
    assert list(jobs["ratio"]) == [20.0 / 0.75, 40.0]
    assert list(methods["compared"]) == [
        f"run_od.py's {od[0]} model calls / {od[0]}",
        f"run_od.py's {od[1]} model calls / {od[1]}",
        "run_ts.py's NURD model calls / NURD",
    ]  # GBTR: the script raised, no CPU of its own
    assert list(methods["ratio"]) == [12.0, 2.0, 12.0]
    assert list(methods["target_met"]) == [True, False, True]
    text = "\n".join(bench.speed_summary(table))
    assert text.index("the script's whole run of the job") < text.index("per job and method")
    assert "| d | run_ts.py's NURD model calls / NURD | 0 | 1 | 6.0 | 0.5 | 12.0 |" in text


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


def _predict_workdir(root: Path, work_s: float, tasks_per_job: list[int]) -> Path:
    """A finished run's files for one Google-format dataset, method M: two prediction shards
    of the jobs `tasks_per_job` (each a shard's own copy), each shard's rule work `work_s`,
    job i's replay seconds 0.01 * n_tasks ** 0.5 * n_checkpoints ** 0.25 with 1 + i % 5
    checkpoints, one simulation job."""
    dataset = "g"
    config = root / "config.yaml"
    config.write_text(f"datasets:\n  {dataset}:\n    kind: google-2011\n")
    converted = root / "resources" / "converted" / dataset
    converted.mkdir(parents=True)
    n_jobs = len(tasks_per_job)
    pd.DataFrame({"n_tasks": tasks_per_job * 2}).to_parquet(converted / "manifest.parquet")
    line = "x INFO stragglers.io: rule cpu: start_up_s=0.300 work_s={:.3f}\n"
    for shard in ("shard-0", "shard-1"):
        for part in ("benchmarks", "logs"):
            (root / part / "predict" / dataset / "M").mkdir(parents=True, exist_ok=True)
        (root / "benchmarks" / "predict" / dataset / "M" / f"{shard}.tsv").write_text(
            f"s\tcpu_time\n1.0\t{work_s + 0.5}\n"
        )
        (root / "logs" / "predict" / dataset / "M" / f"{shard}.log").write_text(line.format(work_s))
        predictions = root / "results" / dataset / "predictions" / "M"
        predictions.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(
            {
                "job_id": [f"{shard}-{i}" for i in range(n_jobs)],
                "n_tasks": tasks_per_job,
                "n_checkpoints": [1 + i % 5 for i in range(n_jobs)],
                "seconds": [
                    0.01 * n**0.5 * (1 + i % 5) ** 0.25 for i, n in enumerate(tasks_per_job)
                ],
            }
        ).to_parquet(predictions / f"{shard}.jobs.parquet")
    for part in ("benchmarks", "logs"):
        (root / part / "simulate" / dataset).mkdir(parents=True)
    (root / "benchmarks" / "simulate" / dataset / "M.tsv").write_text("s\tcpu_time\n1.0\t0.5\n")
    (root / "logs" / "simulate" / dataset / "M.log").write_text(line.format(0.2))
    return config


def test_project_cost_charges_a_methods_imports_once_per_rule_job(tmp_path):
    """Each shard's work is 2 s of imports and 0.01 s per task: per task, the rate is the work
    less the imports; the imports are paid once per full-run shard (84), not scaled with the
    tasks. Without import seconds, everything is per task (the old accounting)."""
    bench = _bench("project_cost")
    config = _predict_workdir(tmp_path, work_s=2.0 + 0.01 * 100, tasks_per_job=[50, 50])
    rates = bench.measured_rates(tmp_path, config)
    assert rates["google"]["predict_work"]["M"] == (6.0, 2, 200)
    assert bench.predict_rates(rates["google"], {"M": 2.0}) == {"M": 0.01}
    new = bench.project(rates, [1], 1.0, 0.0, 24, {"google": {"M": 2.0}})["google"]
    # 0.01 s x 1.1 M tasks + 2 s x 84 shards
    assert new["prediction_cpu_hours_by_method"]["M"] == round((11_000 + 168) / 3600, 3)
    assert new["prediction_imports_cpu_hours"] == round(168 / 3600, 3)
    old = bench.project(rates, [1], 1.0, 0.0, 24)["google"]
    assert old["prediction_cpu_hours_by_method"]["M"] == round(0.03 * 1_100_000 / 3600, 3)


def test_project_cost_charges_each_traces_own_conversion_rate(tmp_path):
    """Without --convert-seconds-per-gb each trace's conversion costs its own rate per GB
    (Google's measured at its selection's share of kept rows); a given rate holds for both."""
    bench = _bench("project_cost")
    config = _predict_workdir(tmp_path, work_s=1.0, tasks_per_job=[50, 50])
    rates = bench.measured_rates(tmp_path, config)
    stage = "conversion (one job, before scatter-gather)"
    google = bench.FULL["google"]
    own = bench.project(rates, [1], None, 0.0, 24)["google"]["stages_cpu_hours"][stage]
    assert own == round(google["convert_seconds_per_gb"] * google["raw_gb"] / 3600, 2)
    assert google["convert_seconds_per_gb"] != bench.FULL["alibaba"]["convert_seconds_per_gb"]
    given = bench.project(rates, [1], 10.0, 0.0, 24)["google"]["stages_cpu_hours"][stage]
    assert given == round(10.0 * google["raw_gb"] / 3600, 2)


def test_project_cost_charges_a_job_measured_at_two_sizes_its_fixed_cost_once(tmp_path):
    """--stage-scaling: a simulation job whose work is 3 s on the run's tasks and 10 s on 8
    times them costs 2 s once and 1 s per run's worth of tasks; without it, its run's work
    scales with the tasks."""
    bench = _bench("project_cost")
    config = _predict_workdir(tmp_path, work_s=1.0, tasks_per_job=[50, 50])
    rates = bench.measured_rates(tmp_path, config)
    tasks = rates["google"]["tasks_measured"]
    assert bench.per_task_and_fixed([3.0, 10.0], 8, tasks) == (1.0 / tasks, 2.0)
    startup = statistics.median(rates["google"]["rule_startups"])
    scaling = {"google": {"tile": 8, "simulate": {"M": [3.0, 10.0]}}}
    measured = bench.project(rates, [1], 1.0, 0.0, 24, None, None, scaling)["google"]
    full_tasks = bench.FULL["google"]["tasks"]
    expected = (full_tasks / tasks + 2.0 + startup) / 3600
    assert measured["stages_cpu_hours"]["simulation"] == round(expected, 2)
    per_task = bench.project(rates, [1], 1.0, 0.0, 24)["google"]["stages_cpu_hours"]
    assert per_task["simulation"] == round((0.2 / tasks * full_tasks + startup) / 3600, 2)


def test_project_cost_fits_cost_per_job_against_tasks(tmp_path):
    """Replay seconds per job ~ n_tasks ** 0.5 * n_checkpoints ** 0.25: the fit finds both
    exponents, and rescaling the jobs to the full run's 130.6 tasks per job costs more per
    task than the linear rescaling (a sublinear cost falls slower than the tasks)."""
    bench = _bench("project_cost")
    tasks = [400, 300, 200, 150, 100, 80, 60, 40]
    config = _predict_workdir(tmp_path, work_s=3.0, tasks_per_job=tasks)
    rates = bench.measured_rates(tmp_path, config)
    fit = bench.cost_per_job_fit(rates["google"], bench.FULL["google"], skip=0)
    assert fit["exponent_n_tasks"] == 0.5 and fit["exponent_n_checkpoints"] == 0.25
    assert fit["r_squared"] == 1.0 and fit["jobs_fitted"] == 2 * len(tasks)
    per_job = 1_100_000 / 8425
    seconds = np.array([0.01 * n**0.5 * (1 + i % 5) ** 0.25 for i, n in enumerate(tasks)])
    by_fit = np.mean(seconds * (per_job / np.array(tasks)) ** 0.5)
    linear = seconds.sum() / sum(tasks) * per_job
    assert fit["per_task_scale"] == round(by_fit / linear, 3) and fit["per_task_scale"] > 1
    skipped = bench.cost_per_job_fit(rates["google"], bench.FULL["google"], skip=2)
    assert skipped["jobs_fitted"] == 2 * (len(tasks) - 2)


def test_stage_cpu_tiles_predictions_with_distinct_job_ids(tmp_path, monkeypatch):
    """`--tile N`: each prediction file written N times over in one file, each copy's job ids
    suffixed so the simulation sees N times the jobs; the rows otherwise unchanged."""
    bench = _bench("stage_cpu")
    monkeypatch.chdir(tmp_path)
    frames = {
        "tasks": pd.DataFrame({"job_id": ["j1", "j1", "j2"], "task": [0, 1, 0]}),
        "jobs": pd.DataFrame({"job_id": ["j1", "j2"], "n_tasks": [2, 1]}),
    }
    for part, frame in frames.items():
        for shard in range(2):
            path = Path(bench._prediction_files("d", "M", part, 2)[shard])
            path.parent.mkdir(parents=True, exist_ok=True)
            frame.to_parquet(path, index=False)
    bench.tile_predictions("d", "M", 2, 3, tmp_path / "tiled")
    for part, frame in frames.items():
        for path in bench._prediction_files("d", "M", part, 2, str(tmp_path / "tiled")):
            tiled = pd.read_parquet(path)
            assert len(tiled) == 3 * len(frame)
            expected = [f"{j}-t{k}" for k in range(3) for j in frame["job_id"]]
            assert list(tiled["job_id"]) == expected
            pd.testing.assert_frame_equal(
                tiled.drop(columns="job_id").iloc[: len(frame)], frame.drop(columns="job_id")
            )
