"""Rule bodies of the launch-time stage (workflow/rules/launch.smk): one job per (dataset,
launch method) runs the online launch predictions, the learning curve and the hold-back
simulation; one job gathers them into tables and figures."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd

from stragglers.io import save_figure, write_csv_atomic, write_parquet_atomic, write_text_atomic
from stragglers.launch.crossjob import (
    LaunchSettings,
    add_labels,
    learning_curve,
    online_predictions,
)
from stragglers.launch.simulate import hold_back_summary, simulate_hold_back
from stragglers.launch.tasks import check_workload, load_launch_tasks
from stragglers.methods.base import reject_renamed

log = logging.getLogger(__name__)

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
    method_class = get_launch_method(launch_method)
    settings = launch_settings(launch, kind, float(straggler_quantile))
    rows, features = load_launch_tasks(str(Path(manifest).parent), kind, settings.workload)
    rows = add_labels(rows, settings)
    log.info(
        "%s: %d tasks of %d jobs, %d nodes, %d workloads (%s), label %s",
        dataset,
        len(rows),
        rows["job_id"].nunique(),
        rows["node"].nunique(),
        rows["workload"].nunique(),
        settings.workload,
        settings.label,
    )
    params = dict(method_params)
    predictions, job_rows = online_predictions(
        rows, features, method_class, params, settings, seed, dataset
    )
    curve_rows = learning_curve(rows, features, method_class, params, settings, seed, dataset)
    curve_rows["workload"] = settings.workload
    held_back = simulate_hold_back(
        predictions,
        float(interval),
        float(straggler_quantile),
        int(repeats),
        int(seed),
        [float(f) for f in deadline_factors],
    )
    for frame, path in (
        (predictions, tasks),
        (job_rows, jobs),
        (curve_rows, curve),
        (held_back, simulation),
    ):
        write_parquet_atomic(frame, path)
    failed = int((job_rows["status"] == "failed").sum())
    log.info(
        "%s on %s: %d jobs, %d failed, %d without a model",
        launch_method,
        dataset,
        len(job_rows),
        failed,
        int(job_rows["reason"].astype(str).str.startswith("no model").sum()),
    )


def _markdown(frame: pd.DataFrame, digits: int = 3) -> str:
    return frame.to_markdown(index=False, floatfmt=f".{digits}f") if len(frame) else "(no rows)"


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
    """Rule launch_tables: launch-time Table 3 (the replay's scoring), the MTL paper's Table 5 / Figure 3 and §4.8
    (learning curve, unseen nodes and workloads) and the hold-back simulation."""
    from stragglers.evaluate.metrics import job_metrics, summary_table

    task_frame = pd.concat([pd.read_parquet(p) for p in tasks], ignore_index=True)
    job_frame = pd.concat([pd.read_parquet(p) for p in jobs], ignore_index=True)
    metrics = job_metrics(task_frame, job_frame[[c for c in job_frame if c != "trace"]])
    table = summary_table(metrics)
    no_model = job_frame.assign(no_model=job_frame["reason"].astype(str).str.startswith("no model"))
    counts = no_model.groupby(["dataset", "method"])["no_model"].sum().rename("jobs_without_model")
    table = table.merge(counts.reset_index(), on=["dataset", "method"], how="left")
    write_csv_atomic(table, table_csv)
    write_text_atomic(
        "# Launch-time methods, scored like Table 3\n\nA task flagged at launch counts as flagged "
        "(flag time = its start); jobs whose model had too little finished data flag nothing "
        '(`jobs_without_model`). See docs/definitions.md, "Launch-time prediction".\n\n'
        + _markdown(table)
        + "\n",
        table_md,
    )

    curve = pd.concat([pd.read_parquet(p) for p in curves], ignore_index=True)
    write_csv_atomic(curve, curve_csv)
    columns = [
        "dataset",
        "method",
        "train_share",
        "n_train",
        "n_test",
        "balanced_accuracy",
        "accuracy",
        "TPR",
        "FPR",
        "F1",
        "n_unseen_node",
        "unseen_node_balanced_accuracy",
        "n_unseen_workload",
        "unseen_workload_balanced_accuracy",
        "status",
    ]
    write_text_atomic(
        "# Launch-time models against the share of data used for training (MTL paper, Table 5 "
        "and Figure 3; unseen nodes and workloads: its Section 4.8)\n\nTemporal split: training "
        "= tasks of jobs finished when the share of the trace's tasks had started; test = the "
        "tasks started after. Stragglers oversampled in training only; balanced_accuracy = "
        "(TPR + 1 - FPR) / 2 is the accuracy on a class-balanced test set, the number the "
        "paper reports (it oversamples its validation sets too).\n\n"
        + _markdown(curve[[c for c in columns if c in curve]])
        + "\n",
        curve_md,
    )

    simulation = pd.concat([pd.read_parquet(p) for p in simulations], ignore_index=True)
    summary = hold_back_summary(simulation, [float(f) for f in deadline_factors])
    write_csv_atomic(summary, simulation_csv)
    write_text_atomic(
        "# Holding predicted stragglers back at launch (one scheduling interval, duration "
        "redrawn with the common random numbers)\n\nreduction = (JCT_trace - JCT_held_back) / "
        "JCT_trace; Hadoop-NS (hold nothing) is 0 by definition; PoCD_base_* is Hadoop-NS's.\n\n"
        + _markdown(summary)
        + "\n",
        simulation_md,
    )
    _curve_figures(curve, figures)


def _curve_figures(curve: pd.DataFrame, figures: list[str]) -> None:
    """Each dataset's learning curve, to its path among `figures`
    (results/<dataset>/figures/launch_learning_curve.png)."""
    by_dataset = {Path(path).parent.parent.name: path for path in figures}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for dataset, frame in curve.groupby("dataset"):
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
        for method, rows in frame.groupby("method"):
            for ax, metric in zip(axes, ("balanced_accuracy", "TPR", "FPR")):
                ax.plot(rows["train_share"], rows[metric], marker="o", label=method)
        for ax, metric in zip(axes, ("balanced_accuracy", "TPR", "FPR")):
            ax.set_xlabel("share of the trace's tasks started before the split (fraction)")
            ax.set_ylabel(f"{metric} (0-1)")
            ax.set_ylim(-0.02, 1.02)
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=7)
        fig.suptitle(f"{dataset}: launch-time models vs training data (MTL paper, Fig. 3)")
        fig.tight_layout()
        save_figure(fig, by_dataset[str(dataset)], dpi=110)
        plt.close(fig)
