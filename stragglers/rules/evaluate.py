"""What the evaluation rules call: per-dataset metrics and figures, Table 3, the cost table
(workflow/rules/evaluate.smk).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from stragglers.formats.datasets import PAPER_TRACE_OF_KIND
from stragglers.formats.predictions import KEYS
from stragglers.io import write_csv_atomic


def evaluate_dataset(
    *,
    task_files: list[str],
    job_files: list[str],
    job_metrics: str,
    f1_per_job: str,
    f1_mean: str,
    figure: str,
    leads: str,
    lead_figure: str,
    dataset: str,
    n_points: int,
    protocol: str,
) -> pd.DataFrame:
    """Rule evaluate_dataset: per-job metrics, F1 and lead over normalised time, and their
    figures, for every method's prediction files of one dataset."""
    # the scoring function under another name: `job_metrics` is the rule's output here
    from stragglers.evaluate import timing
    from stragglers.evaluate.metrics import f1_over_time, load_predictions
    from stragglers.evaluate.metrics import job_metrics as score_jobs
    from stragglers.report.tables import plot_lead_distribution

    # one method at a time: memory is bounded by one method's predictions, not all of them
    by_method: dict[str, tuple[list[str], list[str]]] = {}
    for path in task_files:
        by_method.setdefault(Path(path).parent.name, ([], []))[0].append(path)
    for path in job_files:
        by_method.setdefault(Path(path).parent.name, ([], []))[1].append(path)
    metric_frames, per_job_frames, mean_frames, lead_frames = [], [], [], []
    for method_tasks, method_jobs in by_method.values():
        tasks, jobs = load_predictions(method_tasks, method_jobs)
        # how early the flags came (lead, early-F1) beside the confusion-matrix metrics
        metric_frames.append(
            score_jobs(tasks, jobs).merge(
                timing.timing_job_metrics(tasks, jobs, validated=True), on=KEYS, how="left"
            )
        )
        per_job, mean = f1_over_time(tasks, jobs, n_points=n_points)
        lead_per_job, lead_mean = timing.lead_over_time(
            tasks, jobs, n_points=n_points, validated=True
        )
        per_job_frames.append(per_job.merge(lead_per_job, on=[*KEYS, "k"], how="left"))
        mean_frames.append(mean.merge(lead_mean, on=["dataset", "method", "k"], how="left"))
        lead_frames.append(timing.flag_leads(tasks, jobs, validated=True))
        del tasks, jobs
    metrics = pd.concat(metric_frames, ignore_index=True)
    per_job = pd.concat(per_job_frames, ignore_index=True)
    mean = pd.concat(mean_frames, ignore_index=True)
    lead_rows = pd.concat(lead_frames, ignore_index=True)
    write_csv_atomic(metrics, job_metrics)
    write_csv_atomic(per_job, f1_per_job)
    write_csv_atomic(mean, f1_mean)
    write_csv_atomic(lead_rows, leads)
    from stragglers.report.figures import plot_f1_over_time_panels

    plot_f1_over_time_panels(mean, figure, dataset, protocol)
    plot_lead_distribution(lead_rows, metrics, lead_figure, dataset)
    return metrics


def paper_rows_for(paper_table: str, kinds: dict[str, str]) -> pd.DataFrame:
    """The paper's Table 3 rows re-labelled with our dataset names (matched by trace kind)."""
    from stragglers.report.tables import read_paper_table3

    paper = read_paper_table3(paper_table)
    frames = []
    for dataset, kind in kinds.items():
        rows = paper[paper["dataset"].str.lower() == PAPER_TRACE_OF_KIND.get(kind, "")].copy()
        rows["dataset"] = dataset
        frames.append(rows)
    return pd.concat(frames, ignore_index=True)


def table3(
    *,
    job_metrics: list[str],
    datasets: list[str],
    kinds: dict[str, str],
    paper: str,
    csv: str,
    md: str,
    summary_csv: str,
    leads: list[str] | None = None,
    seed: int | None = None,
    bootstrap: dict | None = None,
    comparisons: str | None = None,
) -> pd.DataFrame:
    """Rule table3: Table 3 beside the paper's rows; with `seed`, the bootstrap intervals over jobs (`bootstrap`: resamples,
    confidence_level, method; stragglers.evaluate.bootstrap) are added as `<metric>_lo` /
    `<metric>_hi` columns after the others, and with `comparisons` (the
    paired_comparisons rule's CSV) the methods tied with the best are marked."""
    from stragglers.evaluate import bootstrap as boot
    from stragglers.evaluate import timing
    from stragglers.evaluate.metrics import summary_table
    from stragglers.report.tables import write_table3

    metrics = pd.concat(
        [pd.read_csv(p, dtype={"job_id": str}) for p in job_metrics], ignore_index=True
    )
    summary = summary_table(metrics, dataset_order=datasets)
    lead_rows = None
    if leads:
        lead_rows = pd.concat(
            [pd.read_csv(p, dtype={"job_id": str}) for p in leads], ignore_index=True
        )
        summary = summary.merge(
            timing.timing_summary(metrics, lead_rows), on=["dataset", "method"], how="left"
        )
    write_csv_atomic(summary, summary_csv)
    paper_path = Path(csv).with_name("paper_table3_relabelled.csv")
    write_csv_atomic(paper_rows_for(paper, kinds), paper_path)
    intervals = None
    if seed is not None:
        intervals = boot.table3_intervals(
            metrics, lead_rows, seed=seed, **bootstrap_settings(bootstrap)
        )
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
        confidence_level=bootstrap_settings(bootstrap)["confidence_level"],
    )
    return summary


def bootstrap_settings(settings: dict | None) -> dict:
    """The config's `evaluation` bootstrap settings as keyword arguments of
    stragglers.evaluate.bootstrap (defaults where absent)."""
    from stragglers.evaluate import bootstrap as boot

    settings = settings or {}
    return {
        "n_resamples": int(settings.get("bootstrap_resamples", boot.N_RESAMPLES)),
        "confidence_level": float(settings.get("confidence_level", boot.CONFIDENCE_LEVEL)),
        "method": str(settings.get("bootstrap_method", boot.DEFAULT_METHOD)),
    }


def paired_comparisons(
    *,
    job_metrics: list[str],
    datasets: list[str],
    seed: int,
    bootstrap: dict | None,
    csv: str,
    md: str,
) -> pd.DataFrame:
    """Rule paired_comparisons: every method against the best non-privileged method (by mean F1, and by mean early-F1)
    and against NURD: paired bootstrap differences over the jobs both scored, Holm-adjusted
    p-values and the tie flag (stragglers.evaluate.bootstrap, docs/statistics.md)."""
    from stragglers.evaluate import bootstrap as boot
    from stragglers.report.tables import write_table

    metrics = pd.concat(
        [pd.read_csv(p, dtype={"job_id": str}) for p in job_metrics], ignore_index=True
    )
    summary = boot.comparison_summary(metrics, dataset_order=datasets)
    settings = bootstrap_settings(bootstrap)
    table = boot.paired_comparisons(metrics, summary, seed=seed, **settings)
    level = f"{100 * settings['confidence_level']:g} %"
    alpha = f"{1 - settings['confidence_level']:.2g}"
    write_table(
        table,
        csv,
        md,
        title="Paired comparisons: every method against the best and against NURD",
        caption=(
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
        ),
    )
    return table


def cost_table(*, jobs: list[str], benchmarks: list[str], csv: str, md: str) -> pd.DataFrame:
    """Rule cost_table: seconds per job and per checkpoint, with the rules' benchmark totals."""
    from stragglers.evaluate.metrics import cost_table as cost_per_method
    from stragglers.report.tables import write_table

    job_rows = pd.concat([pd.read_parquet(p) for p in jobs], ignore_index=True)
    cost = cost_per_method(job_rows)
    bench_rows = []
    for path in benchmarks:
        parts = Path(path).parts  # benchmarks/predict/<dataset>/<method>/shard-<k>.tsv
        frame = pd.read_csv(path, sep="\t")
        bench_rows.append(
            {
                "dataset": parts[-3],
                "method": parts[-2],
                "rule_seconds": float(frame["s"].iloc[0]),
                "max_rss_mb": float(pd.to_numeric(frame["max_rss"], errors="coerce").iloc[0]),
            }
        )
    bench = (
        pd.DataFrame(bench_rows)
        .groupby(["dataset", "method"], sort=False)
        .agg(rule_seconds_total=("rule_seconds", "sum"), max_rss_mb=("max_rss_mb", "max"))
        .reset_index()
    )
    cost = cost.merge(bench, on=["dataset", "method"], how="left")
    write_table(
        cost,
        csv,
        md,
        title="Cost per method",
        caption=(
            "Wall time of each method in the online replay: seconds per job (mean, std), "
            "seconds per checkpoint (total seconds / checkpoints asked to predict), and the "
            "Snakemake benchmark of the prediction rules (rule_seconds_total: all shards, "
            "including reading the jobs; max_rss_mb: peak memory of one shard). One core each."
        ),
    )
    return cost
