"""The evaluation's tables over datasets (workflow/rules/evaluate.smk): Table 3 beside the
paper's rows with its intervals and ties, the paired comparisons, and the cost per method."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from stragglers.evaluate import bootstrap as boot
from stragglers.evaluate.metrics import summary_table
from stragglers.evaluate.timing import timing_summary
from stragglers.formats.datasets import PAPER_TRACE_OF_KIND
from stragglers.io import write_csv_atomic
from stragglers.report.tables import read_paper_table3, write_table, write_table3


def paper_rows_for(paper_table: str, kinds: dict[str, str]) -> pd.DataFrame:
    """The paper's Table 3 rows re-labelled with our dataset names (matched by trace kind)."""
    paper = read_paper_table3(paper_table)
    frames = []
    for dataset, kind in kinds.items():
        rows = paper[paper["dataset"].str.lower() == PAPER_TRACE_OF_KIND.get(kind, "")].copy()
        rows["dataset"] = dataset
        frames.append(rows)
    return pd.concat(frames, ignore_index=True)


def write_table3_outputs(
    metrics: pd.DataFrame,
    *,
    datasets: Sequence[str],
    kinds: dict[str, str],
    paper: str,
    csv: str,
    md: str,
    summary_csv: str,
    lead_rows: pd.DataFrame | None = None,
    seed: int | None = None,
    bootstrap: dict | None = None,
    comparisons: str | None = None,
) -> pd.DataFrame:
    """Table 3 from every dataset's per-job `metrics` (with `lead_rows`, the timing columns):
    the long summary, the paper's rows relabelled beside it, and with `seed` the bootstrap
    intervals over jobs (`bootstrap`: the config's settings, boot.bootstrap_settings); with
    `comparisons` (the paired comparisons' CSV) the methods tied with the best are marked."""
    summary = summary_table(metrics, dataset_order=datasets)
    if lead_rows is not None:
        summary = summary.merge(
            timing_summary(metrics, lead_rows), on=["dataset", "method"], how="left"
        )
    write_csv_atomic(summary, summary_csv)
    paper_path = Path(csv).with_name("paper_table3_relabelled.csv")
    write_csv_atomic(paper_rows_for(paper, kinds), paper_path)
    settings = boot.bootstrap_settings(bootstrap)
    intervals = None
    if seed is not None:
        intervals = boot.table3_intervals(metrics, lead_rows, seed=seed, **settings)
    ties = None
    if comparisons is not None:
        ties = boot.tie_marks(pd.read_csv(comparisons, dtype={"tied": "boolean"}))
    write_table3(
        summary,
        csv,
        md,
        paper_table3_path=paper_path,
        dataset_order=datasets,
        intervals=intervals,
        ties=ties,
        confidence_level=settings["confidence_level"],
    )
    return summary


def paired_comparisons_caption(settings: dict) -> str:
    """What a row of the paired comparisons is, under the bootstrap `settings`."""
    level = f"{100 * settings['confidence_level']:g} %"
    alpha = f"{1 - settings['confidence_level']:.2g}"
    return (
        "One row per dataset, metric (F1, early-F1: per-job values), reference and method. "
        "reference_kind 'best': the non-privileged method with the highest mean of that "
        "metric in Table 3; 'NURD': NURD. Over the jobs both methods scored (n_jobs): "
        "method_mean and reference_mean, diff = mean of (method - reference) per job, and "
        f"its {level} paired bootstrap interval diff_lo, diff_hi (jobs resampled, the same "
        f"jobs for both methods; {settings['n_resamples']} resamples, "
        f"{settings['method']} interval, seeded from the config's seed). p_value: two-sided "
        "bootstrap p-value of diff = 0; p_holm: Holm-adjusted over the non-privileged "
        "methods of the same dataset, metric and reference; tied: p_holm >= "
        f"{alpha}, the method is statistically indistinguishable from the reference "
        "(marked in table3.md for the best). Privileged methods are outside the family. "
        "note: why a row has no interval. Details: docs/statistics.md."
    )


def write_paired_comparisons(
    metrics: pd.DataFrame,
    *,
    datasets: Sequence[str],
    seed: int,
    bootstrap: dict | None,
    csv: str,
    md: str,
) -> pd.DataFrame:
    """Every method against the best non-privileged method (by mean F1, and by mean early-F1)
    and against NURD: paired bootstrap differences over the jobs both scored, Holm-adjusted
    p-values and the tie flag (stragglers.evaluate.bootstrap, docs/statistics.md)."""
    summary = boot.comparison_summary(metrics, dataset_order=datasets)
    settings = boot.bootstrap_settings(bootstrap)
    table = boot.paired_comparisons(metrics, summary, seed=seed, **settings)
    write_table(
        table,
        csv,
        md,
        title="Paired comparisons: every method against the best and against NURD",
        caption=paired_comparisons_caption(settings),
    )
    return table


def benchmark_totals(benchmarks: Sequence[str]) -> pd.DataFrame:
    """The prediction rules' Snakemake benchmarks (benchmarks/predict/<dataset>/<method>/
    shard-<k>.tsv) per dataset and method: seconds over the shards and the peak memory."""
    rows = []
    for path in benchmarks:
        parts = Path(path).parts
        frame = pd.read_csv(path, sep="\t")
        rows.append(
            {
                "dataset": parts[-3],
                "method": parts[-2],
                "rule_seconds": float(frame["s"].iloc[0]),
                "max_rss_mb": float(pd.to_numeric(frame["max_rss"], errors="coerce").iloc[0]),
            }
        )
    return (
        pd.DataFrame(rows)
        .groupby(["dataset", "method"], sort=False)
        .agg(rule_seconds_total=("rule_seconds", "sum"), max_rss_mb=("max_rss_mb", "max"))
        .reset_index()
    )


COST_CAPTION = (
    "Wall time of each method in the online replay: seconds per job (mean, std), "
    "seconds per checkpoint (total seconds / checkpoints asked to predict), and the "
    "Snakemake benchmark of the prediction rules (rule_seconds_total: all shards, "
    "including reading the jobs; max_rss_mb: peak memory of one shard). One core each."
)


def write_cost_table(
    cost: pd.DataFrame, benchmarks: Sequence[str], csv: str, md: str
) -> pd.DataFrame:
    """The cost per method (stragglers.evaluate.metrics.cost_table) with its benchmark totals."""
    cost = cost.merge(benchmark_totals(benchmarks), on=["dataset", "method"], how="left")
    write_table(cost, csv, md, title="Cost per method", caption=COST_CAPTION)
    return cost
