"""What the evaluation rules call: per-dataset metrics and figures, Table 3, the cost table
(workflow/rules/evaluate.smk).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from stragglers.formats.predictions import KEYS
from stragglers.io import write_csv_atomic


def evaluate_dataset(
    *,
    task_files: list[str],
    job_files: list[str],
    dataset: str,
    n_points: int,
    out_job_metrics: str,
    out_f1_per_job: str,
    out_f1_mean: str,
    out_figure: str,
    out_leads: str | None = None,
    out_lead_figure: str | None = None,
) -> pd.DataFrame:
    from stragglers import evaluate, report
    from stragglers.evaluate import timing

    # one method at a time: memory is bounded by one method's predictions, not all of them
    by_method: dict[str, tuple[list[str], list[str]]] = {}
    for path in task_files:
        by_method.setdefault(Path(path).parent.name, ([], []))[0].append(path)
    for path in job_files:
        by_method.setdefault(Path(path).parent.name, ([], []))[1].append(path)
    metric_frames, per_job_frames, mean_frames, lead_frames = [], [], [], []
    for method, (method_tasks, method_jobs) in by_method.items():
        tasks, jobs = evaluate.load_predictions(method_tasks, method_jobs)
        # how early the flags came (lead, early-F1) beside the confusion-matrix metrics
        metric_frames.append(evaluate.job_metrics(tasks, jobs).merge(
            timing.timing_job_metrics(tasks, jobs, validated=True), on=KEYS, how="left"))
        per_job, mean = evaluate.f1_over_time(tasks, jobs, n_points=n_points)
        lead_per_job, lead_mean = timing.lead_over_time(tasks, jobs, n_points=n_points,
                                                            validated=True)
        per_job_frames.append(per_job.merge(lead_per_job, on=[*KEYS, "k"], how="left"))
        mean_frames.append(mean.merge(lead_mean, on=["dataset", "method", "k"], how="left"))
        lead_frames.append(timing.flag_leads(tasks, jobs, validated=True))
        del tasks, jobs
    metrics = pd.concat(metric_frames, ignore_index=True)
    per_job = pd.concat(per_job_frames, ignore_index=True)
    mean = pd.concat(mean_frames, ignore_index=True)
    leads = pd.concat(lead_frames, ignore_index=True)
    write_csv_atomic(metrics, out_job_metrics)
    write_csv_atomic(per_job, out_f1_per_job)
    write_csv_atomic(mean, out_f1_mean)
    if out_leads is not None:
        write_csv_atomic(leads, out_leads)
    report.plot_f1_over_time(mean, out_figure, dataset)
    if out_lead_figure is not None:
        report.plot_lead_distribution(leads, metrics, out_lead_figure, dataset)
    return metrics


def paper_rows_for(paper_table: str, kinds: dict[str, str]) -> pd.DataFrame:
    """The paper's Table 3 rows re-labelled with our dataset names (matched by trace kind)."""
    from stragglers.report.tables import read_paper_table3

    paper = read_paper_table3(paper_table)
    published = {"google-2011": "google", "alibaba-2018": "alibaba"}
    frames = []
    for dataset, kind in kinds.items():
        rows = paper[paper["dataset"].str.lower() == published.get(kind, "")].copy()
        rows["dataset"] = dataset
        frames.append(rows)
    return pd.concat(frames, ignore_index=True)


def table3(
    *,
    job_metric_files: list[str],
    datasets: list[str],
    kinds: dict[str, str],
    paper_table: str,
    out_csv: str,
    out_md: str,
    out_summary: str,
    lead_files: list[str] | None = None,
) -> pd.DataFrame:
    from stragglers import evaluate, report
    from stragglers.evaluate import timing

    metrics = pd.concat([pd.read_csv(p, dtype={"job_id": str}) for p in job_metric_files], ignore_index=True)
    summary = evaluate.summary_table(metrics, dataset_order=datasets)
    if lead_files:
        leads = pd.concat([pd.read_csv(p, dtype={"job_id": str}) for p in lead_files],
                          ignore_index=True)
        summary = summary.merge(timing.timing_summary(metrics, leads),
                                on=["dataset", "method"], how="left")
    write_csv_atomic(summary, out_summary)
    paper_path = Path(out_csv).with_name("paper_table3_relabelled.csv")
    write_csv_atomic(paper_rows_for(paper_table, kinds), paper_path)
    report.write_table3(summary, out_csv, out_md, paper_table3_path=paper_path, dataset_order=datasets)
    return summary


def cost_table(*, job_files: list[str], benchmark_files: list[str], out_csv: str, out_md: str) -> pd.DataFrame:
    from stragglers import evaluate, report

    jobs = pd.concat([pd.read_parquet(p) for p in job_files], ignore_index=True)
    cost = evaluate.cost_table(jobs)
    bench_rows = []
    for path in benchmark_files:
        parts = Path(path).parts  # benchmarks/predict/<dataset>/<method>/shard-<k>.tsv
        frame = pd.read_csv(path, sep="\t")
        bench_rows.append(
            {"dataset": parts[-3], "method": parts[-2], "rule_seconds": float(frame["s"].iloc[0]),
             "max_rss_mb": float(pd.to_numeric(frame["max_rss"], errors="coerce").iloc[0])}
        )
    bench = (
        pd.DataFrame(bench_rows)
        .groupby(["dataset", "method"], sort=False)
        .agg(rule_seconds_total=("rule_seconds", "sum"), max_rss_mb=("max_rss_mb", "max"))
        .reset_index()
    )
    cost = cost.merge(bench, on=["dataset", "method"], how="left")
    report.write_table(
        cost,
        out_csv,
        out_md,
        title="Cost per method",
        caption=(
            "Wall time of each method in the online replay: seconds per job (mean, std), "
            "seconds per checkpoint (total seconds / checkpoints asked to predict), and the "
            "Snakemake benchmark of the prediction rules (rule_seconds_total: all shards, "
            "including reading the jobs; max_rss_mb: peak memory of one shard). One core each."
        ),
    )
    return cost
