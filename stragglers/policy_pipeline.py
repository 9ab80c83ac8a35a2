"""Pipeline steps of the mitigation-policy simulation (``stragglers.policies``): per method,
per dataset (tables and figures), and the table over datasets."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from stragglers.pipeline import write_csv_atomic, write_parquet_atomic

log = logging.getLogger(__name__)

ID_COLUMNS = ["dataset", "method", "job_id"]


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
    from stragglers import evaluate, policies

    tasks, jobs = evaluate.load_predictions(task_files, job_files)
    ok = jobs[jobs["status"] == "ok"].set_index("job_id")["straggler_threshold"]
    frames = []
    for (dataset, method, job_id), job_tasks in tasks.groupby(ID_COLUMNS, sort=False):
        if job_id not in ok.index:
            continue
        job_tasks = job_tasks.sort_values("task")
        start = job_tasks["task_start"].to_numpy(float)
        end = job_tasks["task_end"].to_numpy(float)
        # r + 1 chosen by the method for its flags (SRQuant), else the configured default
        chosen = (job_tasks["resume_attempts"].to_numpy(float)
                  if "resume_attempts" in job_tasks else np.full(len(start), np.nan))
        attempts = np.where(np.isnan(chosen), resume_attempts, chosen).astype(np.int64)
        durations = policies.attempt_durations(str(job_id), end - start, repeats,
                                               int(attempts.max()), seed)
        frame = policies.simulate_job_policies(
            start, end, job_tasks["flag_time"].to_numpy(float), durations,
            straggler_threshold=float(ok.loc[job_id]), grid_origin=grid_origin,
            machines=machines, resume_attempts=attempts,
            checkpoint_interval=checkpoint_interval, kill_delay=kill_delay, job_id=str(job_id),
        )
        frame.insert(0, "job_id", str(job_id))
        frame.insert(0, "method", method)
        frame.insert(0, "dataset", dataset)
        frames.append(frame)
    result = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=[*ID_COLUMNS, *policies.POLICY_COLUMNS])
    write_parquet_atomic(result, out)
    log.info("policies: %d jobs simulated (%d failed jobs skipped)", len(frames),
             int((jobs["status"] != "ok").sum()))
    return result


def policies_report(
    *, simulation_files: list[str], dataset: str, deadline_factors: list[float],
    out_csv: str, out_pocd_png: str, out_reduction_png: str,
) -> pd.DataFrame:
    """Per (method, policy, machines): reduction, machine time, PoCD; and the two figures."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from stragglers import policies

    frame = pd.concat([pd.read_parquet(p) for p in simulation_files], ignore_index=True)
    table = policies.pocd_summary(frame, deadline_factors)
    table.insert(0, "dataset", dataset)
    write_csv_atomic(table, out_csv)

    unlimited = table[table["machines"] == "unlimited"]
    factors = [f"pocd_{d:g}" for d in deadline_factors]
    fig, axes = plt.subplots(1, len(factors), figsize=(5 * len(factors), 4.5), squeeze=False)
    markers = {"none": "*", "relaunch": "o", "copy": "s", "resume": "^"}
    for ax, column, d in zip(axes[0], factors, deadline_factors):
        for policy, rows in unlimited.groupby("policy", sort=False):
            ax.scatter(rows["machine_time_rel"], rows[column], marker=markers.get(policy, "o"),
                       label=policy, alpha=0.7)
        named = unlimited[unlimited["method"].isin(["Hadoop-NS", "Oracle", "SRQuant", "LATE",
                                                    "NURD"])]
        for method, x_value, y_value in zip(named["method"], named["machine_time_rel"],
                                            named[column]):
            ax.annotate(method, (x_value, y_value), fontsize=6)
        ax.set_xlabel("machine time / no mitigation")
        ax.set_ylabel(f"PoCD, D = {d:g} x reference")
        ax.set_title(f"{dataset}: D = {d:g} x reference JCT")
    axes[0][0].legend(title="policy")
    fig.tight_layout()
    fig.savefig(out_pocd_png, dpi=120)
    plt.close(fig)

    mitigated = unlimited[unlimited["policy"] != "none"]
    pivot = mitigated.pivot(index="method", columns="policy", values="reduction")
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(pivot)), 4.5))
    width = 0.8 / max(1, pivot.shape[1])
    x = np.arange(len(pivot))
    for i, policy in enumerate(pivot.columns):
        ax.bar(x + i * width, pivot[policy], width, label=policy)
    ax.set_xticks(x + 0.4 - width / 2, pivot.index, rotation=90, fontsize=7)
    ax.axhline(0, color="black", linewidth=0.5)
    ax.set_ylabel("mean JCT reduction (unlimited machines)")
    ax.set_title(f"{dataset}: JCT reduction per policy")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_reduction_png, dpi=120)
    plt.close(fig)
    return table


def policies_table(*, files: list[str], out_csv: str, out_md: str) -> pd.DataFrame:
    """Long CSV over datasets; Markdown: one table per dataset (unlimited and the mean over m)."""
    from stragglers import report

    table = pd.concat([pd.read_csv(p, dtype={"machines": str}) for p in files],
                      ignore_index=True)
    write_csv_atomic(table, out_csv)
    caption = (
        "Per method and mitigation policy (unlimited machines): mean JCT reduction over jobs, "
        "machine time (all attempts' machine-seconds, killed ones included) relative to no "
        "mitigation, and PoCD at deadline D = d x reference JCT (the JCT if no task ran past "
        "the straggler threshold). Hadoop-NS = no mitigation. relaunch = kill and relaunch "
        "(Algorithm 2); copy = speculative copy; resume = speculative resume with r + 1 "
        "attempts. Every machine count is in the CSV. Model: docs/simulation.md."
    )
    parts = []
    for dataset, rows in table.groupby("dataset", sort=False):
        rows = rows[rows["machines"] == "unlimited"].drop(columns=["dataset", "machines"])
        parts.append(f"## {dataset}\n\n" + report.markdown_table(rows))
    text = "# Mitigation policies: JCT, PoCD and machine time\n\n" + caption + "\n\n" + \
        "\n".join(parts)
    from stragglers.pipeline import write_text_atomic

    write_text_atomic(text, out_md)
    return table
