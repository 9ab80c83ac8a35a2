"""What the launch-time rules call (workflow/rules/launch.smk): one job per (dataset,
launch method) runs the online launch predictions, the learning curve and the hold-back
simulation (stragglers/launch); one job gathers them into tables and figures
(stragglers/report/launch.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from stragglers.io import write_parquet_atomic
from stragglers.launch.crossjob import LaunchSettings, run_launch_method
from stragglers.launch.tasks import check_workload
from stragglers.methods.base import reject_renamed
from stragglers.report import launch as report

DEFAULT_WORKLOADS = {
    "google-2011": "user",
    "google-2011-events": "user",
    "alibaba-2018": "task_type",
}


def launch_settings(
    launch_config: dict[str, Any], kind: str, straggler_quantile: float
) -> LaunchSettings:
    """The config's `launch` section for one dataset kind."""
    workload = (launch_config.get("workload") or {}).get(kind, DEFAULT_WORKLOADS.get(kind, ""))
    check_workload(kind, workload)
    keys = (
        "label",
        "wrangler_beta",
        "min_train_tasks",
        "refit_every",
        "history_jobs",
        "oversample",
    )
    reject_renamed("config launch", launch_config, keys, noun="setting")
    values = {key: launch_config[key] for key in keys if key in launch_config}
    if "train_shares" in launch_config:
        values["train_shares"] = tuple(float(s) for s in launch_config["train_shares"])
    return LaunchSettings(workload=workload, straggler_quantile=straggler_quantile, **values)


def launch_predict(
    *,
    manifest: str,
    converted_jobs: Any,
    tasks: str,
    jobs: str,
    curve: str,
    simulation: str,
    dataset: str,
    launch_method: str,
    kind: str,
    method_params: dict[str, Any],
    launch: dict[str, Any],
    straggler_quantile: float,
    interval: float,
    repeats: int,
    deadline_factors: list[float],
    seed: int,
    sources: Any = (),
    method_dirs: list[str] | None = None,
) -> None:
    """Rule launch_predict: one launch-time method on the converted dataset whose manifest is
    `manifest` (`converted_jobs`, `sources`: the method's own files, ordering only): its online
    predictions (`tasks`, `jobs`), learning curve (`curve`) and hold-back simulation
    (`simulation`); `method_dirs`: folders of users' methods."""
    from stragglers.launch.methods import get_launch_method, load_launch_method_dirs

    load_launch_method_dirs(method_dirs)
    outputs = run_launch_method(
        str(Path(manifest).parent),
        kind=kind,
        dataset=dataset,
        method_class=get_launch_method(launch_method),
        params=dict(method_params),
        settings=launch_settings(launch, kind, float(straggler_quantile)),
        seed=seed,
        interval=float(interval),
        repeats=int(repeats),
        deadline_factors=[float(f) for f in deadline_factors],
    )
    for frame, path in zip(outputs, (tasks, jobs, curve, simulation), strict=True):
        write_parquet_atomic(frame, path)


def _read_all(paths: list[str]) -> pd.DataFrame:
    return pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)


def launch_tables(
    *,
    tasks: list[str],
    jobs: list[str],
    curves: list[str],
    simulations: list[str],
    deadline_factors: list[float],
    table_csv: str,
    table_md: str,
    curve_csv: str,
    curve_md: str,
    simulation_csv: str,
    simulation_md: str,
    figures: list[str],
) -> None:
    """Rule launch_tables: launch-time Table 3 (the replay's scoring), the MTL paper's Table 5 /
    Figure 3 and §4.8 (learning curve, unseen nodes and workloads) and the hold-back
    simulation."""
    report.write_launch_table(
        report.launch_table(_read_all(tasks), _read_all(jobs)), table_csv, table_md
    )
    curve = _read_all(curves)
    report.write_learning_curve(curve, curve_csv, curve_md)
    report.write_hold_back(_read_all(simulations), deadline_factors, simulation_csv, simulation_md)
    report.plot_learning_curves(curve, figures)
