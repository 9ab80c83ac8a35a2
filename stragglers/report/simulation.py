"""The completion-time and mitigation-policy results (workflow/rules/simulate.smk): per dataset,
the simulation's tables and figures, the relaunch readings side by side and the policies'
summary with its bootstrap interval; over datasets, the completion-time and policies tables
(docs/simulation.md)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from stragglers.evaluate import bootstrap as boot
from stragglers.io import pyplot, save_figure, write_csv_atomic, write_text_atomic
from stragglers.report.figures import plot_pocd_vs_machine_time
from stragglers.report.tables import (
    markdown_table,
    plot_reduction_bars,
    plot_reduction_by_machines,
    simulation_tables,
    write_table,
)
from stragglers.simulate import policies


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


def write_simulation_report(
    every: pd.DataFrame,
    dataset: str,
    *,
    unlimited_csv: str,
    limited_csv: str,
    unlimited_png: str,
    by_machines_png: str,
    limited_mean_png: str,
    readings_csv: str | None = None,
) -> None:
    """One dataset's completion-time tables and figures from every method's simulation rows
    (`every`); with `readings_csv`, every reading of the relaunch side by side, while the
    tables and figures show the configured (`primary`) one."""
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


COMPLETION_TIME_CAPTION = (
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
)


def completion_time_rows(
    datasets: Sequence[str],
    unlimited_files: Sequence[str],
    limited_files: Sequence[str],
    readings_files: Sequence[str] = (),
) -> pd.DataFrame:
    """Per dataset and method: the mean reduction under Algorithm 2 (with its std over jobs)
    and under Algorithm 3 averaged over machine counts, from each dataset's simulation tables;
    with `readings_files`, the other readings of the relaunch as columns named after them."""
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
    for dataset, path in zip(datasets, readings_files):
        readings = pd.read_csv(path)
        readings = readings[~readings["primary"].astype(bool)]
        for reading, part in readings.groupby("reading", sort=False):
            part = part.set_index("method")
            mask = table["dataset"] == dataset
            for column in ("reduction_unlimited", "reduction_limited_mean_over_m"):
                table.loc[mask, f"{column}_{reading}"] = table.loc[mask, "method"].map(part[column])
    return table


def write_completion_time_table(table: pd.DataFrame, csv: str, md: str) -> None:
    write_table(
        table, csv, md, title="Reduction in job completion time", caption=COMPLETION_TIME_CAPTION
    )


def reduction_intervals(
    frame: pd.DataFrame, *, dataset: str, seed: int, bootstrap: dict | None = None
) -> pd.DataFrame:
    """Bootstrap interval over jobs of the mean JCT reduction per (method, policy, machines)
    of `policies.pocd_summary`: each job's reduction averaged over repeats, jobs resampled
    (one resampling per method, shared by its policies and machine counts); Hadoop-NS (no
    mitigation, reduction 0 on every job) gets [0, 0]. Columns method, policy, machines,
    reduction_lo, reduction_hi, reduction_interval_note."""
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
        **boot.bootstrap_settings(bootstrap),
    )


def policies_summary(
    frame: pd.DataFrame,
    *,
    dataset: str,
    deadline_factors: Sequence[float],
    seed: int | None = None,
    bootstrap: dict | None = None,
) -> pd.DataFrame:
    """Per (method, policy, machines) of one dataset's policy rows: reduction, machine time,
    PoCD (`policies.pocd_summary`); with `seed`, the reduction's bootstrap interval over jobs
    (`reduction_intervals`) appended as reduction_lo, reduction_hi, reduction_interval_note."""
    table = policies.pocd_summary(frame, deadline_factors)
    table.insert(0, "dataset", dataset)
    if seed is None:
        return table
    intervals = reduction_intervals(frame, dataset=dataset, seed=seed, bootstrap=bootstrap)
    # appended: the columns before keep their values and their positions
    return table.merge(
        intervals, on=["method", "policy", "machines"], how="left", validate="one_to_one"
    )


def plot_reduction_by_policy(table: pd.DataFrame, path: str, dataset: str, protocol: str) -> None:
    """The mean JCT reduction per method and policy, unlimited machines, as grouped bars."""
    plt = pyplot()
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
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def write_policies_report(
    table: pd.DataFrame,
    *,
    csv: str,
    pocd_png: str,
    reduction_png: str,
    dataset: str,
    protocol: str,
    deadline_factors: Sequence[float],
) -> None:
    """One dataset's policies summary (`policies_summary`) and its two figures."""
    write_csv_atomic(table, csv)
    plot_pocd_vs_machine_time(table, pocd_png, dataset, protocol, deadline_factors)
    plot_reduction_by_policy(table, reduction_png, dataset, protocol)


POLICIES_CAPTION = (
    "Per method and mitigation policy (unlimited machines): mean JCT reduction over jobs, "
    "machine time (all attempts' machine-seconds, killed ones included) relative to no "
    "mitigation, and PoCD at deadline D = d x reference JCT (the JCT if no task ran past "
    "the straggler threshold). Hadoop-NS = no mitigation. relaunch = kill and relaunch "
    "(Algorithm 2); copy = speculative copy; resume = speculative resume with r + 1 "
    "attempts. Every machine count is in the CSV. Model: docs/simulation.md."
)
INTERVAL_CAPTION = (
    " reduction [lo, hi]: the mean and its bootstrap interval over jobs (jobs "
    "resampled, seeded; CSV columns reduction_lo, reduction_hi; none where it cannot be "
    "computed, reason in reduction_interval_note; docs/statistics.md)."
)


def policies_markdown(table: pd.DataFrame) -> str:
    """The policies table over datasets: one Markdown table per dataset, unlimited machines,
    the reduction with its interval where the table has one."""
    with_interval = "reduction_lo" in table
    caption = POLICIES_CAPTION + (INTERVAL_CAPTION if with_interval else "")
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
    return (
        "# Mitigation policies: JCT, PoCD and machine time\n\n"
        + caption
        + "\n\n"
        + "\n".join(parts)
    )


def write_policies_table(table: pd.DataFrame, csv: str, md: str) -> None:
    write_csv_atomic(table, csv)
    write_text_atomic(policies_markdown(table), md)
