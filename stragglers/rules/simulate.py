"""What the simulation rules call (workflow/rules/simulate.smk): per method, the completion-time
simulation and the mitigation policies (stragglers/simulate); per dataset, their tables and
figures; and the tables over datasets (docs/simulation.md)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

from stragglers.formats.protocols import resolve_rules
from stragglers.io import save_figure, write_csv_atomic, write_parquet_atomic

log = logging.getLogger(__name__)

ID_COLUMNS = ["dataset", "method", "job_id"]


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
    """Rule simulate_method: one method's predictions of one dataset through the completion-time
    simulation (Algorithms 2-3) and the mitigation policies (relaunch, speculative copy,
    speculative resume), in one process (half the start-up of two jobs: bench/run_split.py)."""
    protocol_rules = resolve_rules(replay.get("protocol", "causal"), replay.get("overrides"))
    common = dict(
        task_files=list(tasks),
        job_files=list(jobs),
        grid_origin=float(replay["grid_origin"]),
        checkpoint_interval=float(replay["checkpoint_interval"]),
        machines=list(machines),
        repeats=repeats,
        seed=seed,
    )
    simulate_relaunch(
        **common,
        out=simulation,
        aligned_timeline=protocol_rules.timeline == "aligned",
        relaunch=relaunch,
    )
    simulate_policies_method(
        **common,
        resume_attempts=int(resume_attempts),
        kill_delay=None if kill_delay is None else float(kill_delay),
        out=policies,
    )


def simulate_policies_method(
    *,
    task_files: list[str],
    job_files: list[str],
    grid_origin: float,
    checkpoint_interval: float,
    machines: list[int],
    repeats: int,
    resume_attempts: int,
    kill_delay: float | None,
    seed: int,
    out: str,
) -> pd.DataFrame:
    """Every policy (unlimited and each m) for every successful job of one method."""
    from stragglers.evaluate.metrics import load_predictions
    from stragglers.simulate import policies

    tasks, jobs = load_predictions(task_files, job_files)
    ok = jobs[jobs["status"] == "ok"].set_index("job_id")["straggler_threshold"]
    frames = []
    for (dataset, method, job_id), job_tasks in tasks.groupby(ID_COLUMNS, sort=False):
        if job_id not in ok.index:
            continue
        job_tasks = job_tasks.sort_values("task")
        start = job_tasks["task_start"].to_numpy(float)
        end = job_tasks["task_end"].to_numpy(float)
        # r + 1 chosen by the method for its flags (SRQuant), else the configured default
        chosen = (
            job_tasks["resume_attempts"].to_numpy(float)
            if "resume_attempts" in job_tasks
            else np.full(len(start), np.nan)
        )
        attempts = np.where(np.isnan(chosen), resume_attempts, chosen).astype(np.int64)
        durations = policies.attempt_durations(
            str(job_id), end - start, repeats, int(attempts.max()), seed
        )
        frame = policies.simulate_job_policies(
            start,
            end,
            job_tasks["flag_time"].to_numpy(float),
            durations,
            straggler_threshold=float(ok.loc[job_id]),
            grid_origin=grid_origin,
            machines=machines,
            resume_attempts=attempts,
            checkpoint_interval=checkpoint_interval,
            kill_delay=kill_delay,
            job_id=str(job_id),
        )
        frame.insert(0, "job_id", str(job_id))
        frame.insert(0, "method", method)
        frame.insert(0, "dataset", dataset)
        frames.append(frame)
    result = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=[*ID_COLUMNS, *policies.POLICY_COLUMNS])
    )
    write_parquet_atomic(result, out)
    log.info(
        "policies: %d jobs simulated (%d failed jobs skipped)",
        len(frames),
        int((jobs["status"] != "ok").sum()),
    )
    return result


def reduction_intervals(
    frame: pd.DataFrame, *, dataset: str, seed: int, bootstrap: dict | None = None
) -> pd.DataFrame:
    """Bootstrap interval over jobs of the mean JCT reduction per (method, policy, machines)
    of `policies.pocd_summary`: each job's reduction averaged over repeats, jobs resampled
    (one resampling per method, shared by its policies and machine counts); Hadoop-NS (no
    mitigation, reduction 0 on every job) gets [0, 0]. Columns method, policy, machines,
    reduction_lo, reduction_hi, reduction_interval_note."""
    from stragglers.evaluate import bootstrap as boot
    from stragglers.rules.evaluate import bootstrap_settings

    keys = ["method", "policy", "machines"]
    frame = frame.assign(
        machines=frame["machines"].astype("Int64").astype(str).replace("<NA>", "unlimited")
    )
    base = frame.drop_duplicates(["job_id", "repeat"]).assign(
        method="Hadoop-NS", policy="none", machines="unlimited", reduction=0.0
    )
    frame = pd.concat([base, frame], ignore_index=True)
    per_job = frame.groupby([*keys, "job_id"], sort=False)["reduction"].mean().reset_index()
    return boot.grouped_mean_intervals(
        per_job,
        group=["method"],
        rows=["policy", "machines"],
        value="reduction",
        seed=seed,
        key=("policies", dataset),
        **bootstrap_settings(bootstrap),
    )


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
    With `seed`, the reduction's bootstrap interval over jobs (`reduction_intervals`) is
    appended as reduction_lo, reduction_hi, reduction_interval_note."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from stragglers.simulate import policies

    frame = pd.concat([pd.read_parquet(p) for p in simulation_files], ignore_index=True)
    table = policies.pocd_summary(frame, deadline_factors)
    table.insert(0, "dataset", dataset)
    if seed is not None:
        intervals = reduction_intervals(frame, dataset=dataset, seed=seed, bootstrap=bootstrap)
        # appended: the columns before keep their values and their positions
        table = table.merge(
            intervals, on=["method", "policy", "machines"], how="left", validate="one_to_one"
        )
    write_csv_atomic(table, csv)

    from stragglers.report.figures import plot_pocd_vs_machine_time

    plot_pocd_vs_machine_time(table, pocd_png, dataset, protocol, deadline_factors)

    unlimited = table[table["machines"] == "unlimited"]
    mitigated = unlimited[unlimited["policy"] != "none"]
    pivot = mitigated.pivot(index="method", columns="policy", values="reduction")
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(pivot)), 4.5))
    width = 0.8 / max(1, pivot.shape[1])
    x = np.arange(len(pivot))
    for i, policy in enumerate(pivot.columns):
        ax.bar(x + i * width, pivot[policy], width, label=policy)
    ax.set_xticks(x + 0.4 - width / 2, pivot.index, rotation=90, fontsize=7)
    ax.axhline(0, color="black", linewidth=0.5)
    ax.set_ylabel("mean JCT reduction, unlimited machines (fraction)")
    ax.set_xlabel("method")
    ax.set_title(f"JCT reduction per mitigation policy, {dataset}, protocol {protocol}")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, reduction_png, dpi=120)
    plt.close(fig)
    return table


def policies_table(*, files: list[str], csv: str, md: str) -> pd.DataFrame:
    """Rule policies_table: long CSV over datasets; Markdown: one table per dataset (unlimited and the mean over m)."""
    from stragglers.report.tables import markdown_table

    table = pd.concat([pd.read_csv(p, dtype={"machines": str}) for p in files], ignore_index=True)
    write_csv_atomic(table, csv)
    caption = (
        "Per method and mitigation policy (unlimited machines): mean JCT reduction over jobs, "
        "machine time (all attempts' machine-seconds, killed ones included) relative to no "
        "mitigation, and PoCD at deadline D = d x reference JCT (the JCT if no task ran past "
        "the straggler threshold). Hadoop-NS = no mitigation. relaunch = kill and relaunch "
        "(Algorithm 2); copy = speculative copy; resume = speculative resume with r + 1 "
        "attempts. Every machine count is in the CSV. Model: docs/simulation.md."
    )
    with_interval = "reduction_lo" in table
    if with_interval:
        caption += (
            " reduction [lo, hi]: the mean and its bootstrap interval over jobs (jobs "
            "resampled, seeded; CSV columns reduction_lo, reduction_hi; none where it cannot be "
            "computed, reason in reduction_interval_note; docs/statistics.md)."
        )
    parts = []
    for dataset, rows in table.groupby("dataset", sort=False):
        rows = rows[rows["machines"] == "unlimited"].drop(columns=["dataset", "machines"])
        if with_interval:
            rows = rows.assign(
                reduction=[
                    f"{v:.3f}" + ("" if pd.isna(lo) or pd.isna(hi) else f" [{lo:.3f}, {hi:.3f}]")
                    for v, lo, hi in zip(
                        rows["reduction"], rows["reduction_lo"], rows["reduction_hi"], strict=True
                    )
                ]
            ).drop(columns=["reduction_lo", "reduction_hi", "reduction_interval_note"])
        parts.append(f"## {dataset}\n\n" + markdown_table(rows))
    text = (
        "# Mitigation policies: JCT, PoCD and machine time\n\n"
        + caption
        + "\n\n"
        + "\n".join(parts)
    )
    from stragglers.io import write_text_atomic

    write_text_atomic(text, md)
    return table


log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# completion-time simulation
def simulate_relaunch(
    *,
    task_files: list[str],
    job_files: list[str],
    grid_origin: float,
    checkpoint_interval: float,
    machines: list[int],
    repeats: int,
    seed: int,
    out: str,
    aligned_timeline: bool = False,
    relaunch: str = "from_flag",
) -> pd.DataFrame:
    """With `aligned_timeline` (replay.protocol paper) every task runs [0, latency) and a flag
    time is (k + 1) * interval: the grid starts at 0 and a task already over by its flag's time
    is not relaunched (stragglers.replay.aligned.simulation_flags).

    Every reading of the relaunch (simulation.RELAUNCH_READINGS) is simulated, with the same
    draws; column `reading` names it and `primary` marks the configured one
    (`simulation.relaunch`), which the per-dataset tables and figures show."""
    from stragglers.evaluate.metrics import load_predictions
    from stragglers.replay import aligned
    from stragglers.simulate.jct import (
        RELAUNCH_READINGS,
        RESULT_COLUMNS,
        draw_pool,
        relaunch_reading,
        replacement_durations,
        replacement_uniforms,
        simulate_job,
    )

    relaunch_reading(relaunch)  # an unknown setting stops here, named
    readings = [relaunch] + [r for r in RELAUNCH_READINGS if r != relaunch]
    if aligned_timeline:
        grid_origin = 0.0
    tasks, jobs = load_predictions(task_files, job_files)
    frames = []
    ok_jobs = set(jobs.loc[jobs["status"] == "ok", "job_id"])
    for (dataset, method, job_id), job_tasks in tasks.groupby(
        ["dataset", "method", "job_id"], sort=False
    ):
        if job_id not in ok_jobs:
            continue
        job_tasks = job_tasks.sort_values("task")
        latency = job_tasks["latency"].to_numpy(float)
        flag_time = job_tasks["flag_time"].to_numpy(float)
        if aligned_timeline:
            flag_time = aligned.simulation_flags(flag_time, job_tasks["task_end"].to_numpy(float))
        uniforms = replacement_uniforms(str(job_id), len(latency), repeats, seed)
        for reading in readings:
            relaunch_from, pool = relaunch_reading(reading)
            frame = simulate_job(
                job_tasks["task_start"].to_numpy(float),
                job_tasks["task_end"].to_numpy(float),
                flag_time,
                replacement_durations(
                    draw_pool(latency, job_tasks["is_straggler"].to_numpy(bool), pool),
                    uniforms,
                ),
                grid_origin=grid_origin,
                machines=machines,
                checkpoint_interval=checkpoint_interval,
                job_id=str(job_id),
                relaunch_from=relaunch_from,
            )
            frame.insert(0, "job_id", str(job_id))
            frame.insert(0, "method", method)
            frame.insert(0, "dataset", dataset)
            frame["reading"] = reading
            frame["primary"] = reading == relaunch
            frames.append(frame)
    result = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(
            columns=["dataset", "method", "job_id", *RESULT_COLUMNS, "reading", "primary"]
        )
    )
    write_parquet_atomic(result, out)
    log.info(
        "simulated %d jobs (%d skipped as failed)",
        len(frames) // len(readings),
        int((jobs["status"] != "ok").sum()),
    )
    return result


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
    from stragglers.report.tables import (
        plot_reduction_bars,
        plot_reduction_by_machines,
        simulation_tables,
    )

    every = pd.concat([pd.read_parquet(p) for p in simulations], ignore_index=True)
    if readings_csv is not None:
        write_csv_atomic(relaunch_readings_table(every), readings_csv)
    frame = (
        every[every["primary"]].drop(columns=["reading", "primary"])
        if "primary" in every
        else every
    )
    unlimited_table, by_machines_table = simulation_tables(frame)
    write_csv_atomic(unlimited_table, unlimited_csv)
    write_csv_atomic(by_machines_table, limited_csv)
    unlimited = frame[frame["algorithm"] == "unlimited"]
    limited = frame[frame["algorithm"] == "limited"]
    plot_reduction_bars(
        unlimited, unlimited_png, f"{dataset}: more machines than tasks (Algorithm 2)"
    )
    plot_reduction_by_machines(limited, by_machines_png, f"{dataset}: m machines (Algorithm 3)")
    plot_reduction_bars(
        limited, limited_mean_png, f"{dataset}: Algorithm 3, mean over machine counts"
    )


def relaunch_readings_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, method, reading): mean reduction over jobs under Algorithm 2 and under
    Algorithm 3 averaged over machine counts (a job's value: its mean over repeats / machine
    counts), and whether the reading is the configured one."""
    keys = ["dataset", "method", "reading"]
    per_job = frame.groupby([*keys, "primary", "job_id", "algorithm"], sort=False)[
        "reduction"
    ].mean()
    table = per_job.groupby([*keys, "primary", "algorithm"], sort=False).mean().unstack("algorithm")
    table = table.reset_index().rename(
        columns={"unlimited": "reduction_unlimited", "limited": "reduction_limited_mean_over_m"}
    )
    return table[[*keys, "primary", "reduction_unlimited", "reduction_limited_mean_over_m"]]


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
    from stragglers.report.tables import write_table

    rows = []
    for dataset, unlimited_path, limited_path in zip(datasets, unlimited_files, limited_files):
        unlimited = pd.read_csv(unlimited_path)
        limited = pd.read_csv(limited_path)
        mean_limited = limited.groupby("method", sort=False)["reduction_mean"].mean()
        for row in unlimited.itertuples():
            rows.append(
                {
                    "dataset": dataset,
                    "method": row.method,
                    "jobs": int(row.n_jobs),
                    "reduction_unlimited": row.reduction_mean,
                    "reduction_unlimited_std": row.reduction_std,
                    "reduction_limited_mean_over_m": mean_limited.get(row.method, np.nan),
                }
            )
    table = pd.DataFrame(rows)
    for dataset, path in zip(datasets, readings_files or []):
        # the other readings of the relaunch (simulation.RELAUNCH_READINGS), as columns
        readings = pd.read_csv(path)
        readings = readings[~readings["primary"].astype(bool)]
        for reading, part in readings.groupby("reading", sort=False):
            part = part.set_index("method")
            mask = table["dataset"] == dataset
            for column in ("reduction_unlimited", "reduction_limited_mean_over_m"):
                table.loc[mask, f"{column}_{reading}"] = table.loc[mask, "method"].map(part[column])
    write_table(
        table,
        csv,
        md,
        title="Reduction in job completion time",
        caption=(
            "Fraction by which job completion time drops when predicted stragglers are killed at "
            "their flag time and relaunched with a duration drawn from the job's own latencies "
            "(same draws for every method). reduction_unlimited: Algorithm 2 (mean over repeats, "
            "then over jobs; std over jobs). reduction_limited_mean_over_m: Algorithm 3 averaged "
            "over the configured machine counts (paper Figures 8-9). Negative values: relaunching "
            "made jobs slower. Model: docs/simulation.md. Columns ending in a reading's name: "
            "the same under the other readings of Section 7.3 (simulation.relaunch; "
            "replace_latency: a copy ends at the task's start + the draw, ignoring the time the "
            "killed attempt ran; _non_straggler: drawn from the non-stragglers' latencies), "
            "which decide the sign of the result (docs/simulation.md)."
        ),
    )
    return table
