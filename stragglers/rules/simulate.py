"""What the simulation rules call (workflow/rules/simulate.smk): per method, the completion-time
simulation and the mitigation policies (stragglers/simulate); per dataset, their tables and
figures; and the tables over datasets (stragglers/report/simulation.py, docs/simulation.md)."""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd

from stragglers.evaluate.metrics import load_predictions
from stragglers.formats.protocols import resolve_rules
from stragglers.io import write_parquet_atomic
from stragglers.replay import aligned
from stragglers.report import simulation as report
from stragglers.simulate.jct import simulate_jobs
from stragglers.simulate.policies import simulate_jobs_policies

log = logging.getLogger(__name__)


def simulate_method(
    *,
    tasks: list[str],
    jobs: list[str],
    simulation: str,
    policies: str,
    dataset: str,
    method: str,
    replay: dict[str, Any],
    repeats: int,
    machines: list[int],
    seed: int,
    relaunch: str,
    resume_attempts: int,
    kill_delay: float | None,
) -> None:
    """Rule simulate_method: one method's predictions of one dataset, read once, through the
    completion-time simulation (Algorithms 2-3) and the mitigation policies (relaunch,
    speculative copy, speculative resume), in one process (half the start-up of two jobs:
    bench/run_split.py)."""
    protocol_rules = resolve_rules(replay.get("protocol", "causal"), replay.get("overrides"))
    predictions, job_rows = load_predictions(list(tasks), list(jobs))
    common = dict(
        checkpoint_interval=float(replay["checkpoint_interval"]),
        machines=list(machines),
        repeats=repeats,
        seed=seed,
    )
    simulate_relaunch(
        predictions,
        job_rows,
        out=simulation,
        aligned_timeline=protocol_rules.timeline == "aligned",
        grid_origin=float(replay["grid_origin"]),
        relaunch=relaunch,
        **common,
    )
    simulate_policies_method(
        predictions,
        job_rows,
        out=policies,
        grid_origin=float(replay["grid_origin"]),
        resume_attempts=int(resume_attempts),
        kill_delay=None if kill_delay is None else float(kill_delay),
        **common,
    )


def simulate_policies_method(
    tasks: pd.DataFrame, jobs: pd.DataFrame, *, out: str, **settings: Any
) -> pd.DataFrame:
    """Every policy (unlimited and each m) for every successful job of one method's predictions
    (`tasks`, `jobs`: load_predictions's frames; `settings`: the keyword arguments of
    stragglers.simulate.policies.simulate_jobs_policies)."""
    ok = jobs[jobs["status"] == "ok"].set_index("job_id")["straggler_threshold"]
    result = simulate_jobs_policies(tasks, ok, **settings)
    write_parquet_atomic(result, out)
    log.info(
        "policies: %d jobs simulated (%d failed jobs skipped)",
        result["job_id"].nunique(),
        int((jobs["status"] != "ok").sum()),
    )
    return result


def simulate_relaunch(
    tasks: pd.DataFrame,
    jobs: pd.DataFrame,
    *,
    out: str,
    aligned_timeline: bool = False,
    grid_origin: float,
    **settings: Any,
) -> pd.DataFrame:
    """Every reading of the relaunch for every successful job of one method's predictions
    (stragglers.simulate.jct.simulate_jobs; `settings`: its other keyword arguments). With
    `aligned_timeline` (replay.protocol paper) every task runs [0, latency) and a flag time is
    (k + 1) * interval: the grid starts at 0 and a task already over by its flag's time is not
    relaunched (aligned.simulation_flags)."""
    if aligned_timeline:
        grid_origin = 0.0
        flags = aligned.simulation_flags(tasks["flag_time"], tasks["task_end"])
        tasks = tasks.assign(flag_time=flags)
    ok_jobs = set(jobs.loc[jobs["status"] == "ok", "job_id"])
    result = simulate_jobs(tasks, ok_jobs, grid_origin=grid_origin, **settings)
    write_parquet_atomic(result, out)
    log.info(
        "simulated %d jobs (%d skipped as failed)",
        result["job_id"].nunique(),
        int((jobs["status"] != "ok").sum()),
    )
    return result


def policies_report(
    *,
    simulation_files: list[str],
    dataset: str,
    deadline_factors: list[float],
    csv: str,
    pocd_png: str,
    reduction_png: str,
    protocol: str,
    seed: int | None = None,
    bootstrap: dict | None = None,
) -> pd.DataFrame:
    """Rule policies_report: per (method, policy, machines) of one dataset, reduction, machine
    time, PoCD; and the two figures.
    With `seed`, the reduction's bootstrap interval over jobs (report.reduction_intervals) is
    appended as reduction_lo, reduction_hi, reduction_interval_note."""
    frame = pd.concat([pd.read_parquet(p) for p in simulation_files], ignore_index=True)
    table = report.policies_summary(
        frame, dataset=dataset, deadline_factors=deadline_factors, seed=seed, bootstrap=bootstrap
    )
    report.write_policies_report(
        table,
        csv=csv,
        pocd_png=pocd_png,
        reduction_png=reduction_png,
        dataset=dataset,
        protocol=protocol,
        deadline_factors=deadline_factors,
    )
    return table


def policies_table(*, files: list[str], csv: str, md: str) -> pd.DataFrame:
    """Rule policies_table: long CSV over datasets; Markdown: one table per dataset (unlimited
    and the mean over m)."""
    table = pd.concat([pd.read_csv(p, dtype={"machines": str}) for p in files], ignore_index=True)
    report.write_policies_table(table, csv, md)
    return table


def simulation_report(
    *,
    simulations: list[str],
    dataset: str,
    unlimited_csv: str,
    limited_csv: str,
    unlimited_png: str,
    by_machines_png: str,
    limited_mean_png: str,
    readings_csv: str | None = None,
) -> None:
    """Rule simulation_report: completion-time tables and figures for one dataset."""
    report.write_simulation_report(
        pd.concat([pd.read_parquet(p) for p in simulations], ignore_index=True),
        dataset,
        unlimited_csv=unlimited_csv,
        limited_csv=limited_csv,
        unlimited_png=unlimited_png,
        by_machines_png=by_machines_png,
        limited_mean_png=limited_mean_png,
        readings_csv=readings_csv,
    )


def completion_time_table(
    *,
    unlimited_files: list[str],
    limited_files: list[str],
    datasets: list[str],
    csv: str,
    md: str,
    readings_files: list[str] | None = None,
) -> pd.DataFrame:
    """Rule completion_time_table: mean reduction in job completion time, all datasets."""
    table = report.completion_time_rows(
        datasets, unlimited_files, limited_files, readings_files or ()
    )
    report.write_completion_time_table(table, csv, md)
    return table
