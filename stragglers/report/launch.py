"""The launch-time stage's tables and figure (workflow/rules/launch.smk): launch-time Table 3
(the replay's scoring), the MTL paper's Table 5 / Figure 3 and §4.8 (learning curve, unseen
nodes and workloads) and the hold-back simulation."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from stragglers.evaluate.metrics import job_metrics, summary_table
from stragglers.io import pyplot, save_figure, write_csv_atomic, write_text_atomic
from stragglers.launch.simulate import hold_back_summary

CURVE_COLUMNS = [
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


def _markdown(frame: pd.DataFrame, digits: int = 3) -> str:
    return frame.to_markdown(index=False, floatfmt=f".{digits}f") if len(frame) else "(no rows)"


def launch_table(task_frame: pd.DataFrame, job_frame: pd.DataFrame) -> pd.DataFrame:
    """Launch-time predictions scored like Table 3, with the jobs predicted without a model."""
    metrics = job_metrics(task_frame, job_frame[[c for c in job_frame if c != "trace"]])
    table = summary_table(metrics)
    no_model = job_frame.assign(no_model=job_frame["reason"].astype(str).str.startswith("no model"))
    counts = no_model.groupby(["dataset", "method"])["no_model"].sum().rename("jobs_without_model")
    return table.merge(counts.reset_index(), on=["dataset", "method"], how="left")


def write_launch_table(table: pd.DataFrame, csv: str, md: str) -> None:
    write_csv_atomic(table, csv)
    write_text_atomic(
        "# Launch-time methods, scored like Table 3\n\nA task flagged at launch counts as flagged "
        "(flag time = its start); jobs whose model had too little finished data flag nothing "
        '(`jobs_without_model`). See docs/definitions.md, "Launch-time prediction".\n\n'
        + _markdown(table)
        + "\n",
        md,
    )


def write_learning_curve(curve: pd.DataFrame, csv: str, md: str) -> None:
    write_csv_atomic(curve, csv)
    write_text_atomic(
        "# Launch-time models against the share of data used for training (MTL paper, Table 5 "
        "and Figure 3; unseen nodes and workloads: its Section 4.8)\n\nTemporal split: training "
        "= tasks of jobs finished when the share of the trace's tasks had started; test = the "
        "tasks started after. Stragglers oversampled in training only; balanced_accuracy = "
        "(TPR + 1 - FPR) / 2 is the accuracy on a class-balanced test set, the number the "
        "paper reports (it oversamples its validation sets too).\n\n"
        + _markdown(curve[[c for c in CURVE_COLUMNS if c in curve]])
        + "\n",
        md,
    )


def write_hold_back(simulation: pd.DataFrame, deadline_factors: list[float], csv: str, md: str):
    summary = hold_back_summary(simulation, [float(f) for f in deadline_factors])
    write_csv_atomic(summary, csv)
    write_text_atomic(
        "# Holding predicted stragglers back at launch (one scheduling interval, duration "
        "redrawn with the common random numbers)\n\nreduction = (JCT_trace - JCT_held_back) / "
        "JCT_trace; Hadoop-NS (hold nothing) is 0 by definition; PoCD_base_* is Hadoop-NS's.\n\n"
        + _markdown(summary)
        + "\n",
        md,
    )
    return summary


def plot_learning_curves(curve: pd.DataFrame, figures: list[str]) -> None:
    """Each dataset's learning curve, to its path among `figures`
    (results/<dataset>/figures/launch_learning_curve.png)."""
    by_dataset = {Path(path).parent.parent.name: path for path in figures}
    plt = pyplot()
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
