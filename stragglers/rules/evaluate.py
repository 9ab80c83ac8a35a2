"""What the evaluation rules call: per-dataset metrics and figures, Table 3, the paired
comparisons, the cost table (workflow/rules/evaluate.smk; the tables:
stragglers/report/evaluation.py).
"""

from __future__ import annotations

import pandas as pd

from stragglers.evaluate.metrics import cost_table as cost_per_method
from stragglers.evaluate.timing import dataset_scores
from stragglers.io import write_csv_atomic
from stragglers.report import evaluation as report
from stragglers.report.figures import plot_f1_over_time_panels
from stragglers.report.tables import plot_lead_distribution


def _read_job_metrics(paths: list[str]) -> pd.DataFrame:
    return pd.concat([pd.read_csv(p, dtype={"job_id": str}) for p in paths], ignore_index=True)


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
    metrics, per_job, mean, lead_rows = dataset_scores(task_files, job_files, n_points)
    write_csv_atomic(metrics, job_metrics)
    write_csv_atomic(per_job, f1_per_job)
    write_csv_atomic(mean, f1_mean)
    write_csv_atomic(lead_rows, leads)
    plot_f1_over_time_panels(mean, figure, dataset, protocol)
    plot_lead_distribution(lead_rows, metrics, lead_figure, dataset)
    return metrics


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
    """Rule table3: Table 3 beside the paper's rows; with `seed`, the bootstrap intervals over
    jobs (`bootstrap`: resamples, confidence_level, method; stragglers.evaluate.bootstrap) are
    added as `<metric>_lo` / `<metric>_hi` columns after the others, and with `comparisons`
    (the paired_comparisons rule's CSV) the methods tied with the best are marked."""
    return report.write_table3_outputs(
        _read_job_metrics(job_metrics),
        lead_rows=_read_job_metrics(leads) if leads else None,
        datasets=datasets,
        kinds=kinds,
        paper=paper,
        csv=csv,
        md=md,
        summary_csv=summary_csv,
        seed=seed,
        bootstrap=bootstrap,
        comparisons=comparisons,
    )


def paired_comparisons(
    *,
    job_metrics: list[str],
    datasets: list[str],
    seed: int,
    bootstrap: dict | None,
    csv: str,
    md: str,
) -> pd.DataFrame:
    """Rule paired_comparisons: every method against the best non-privileged method (by mean
    F1, and by mean early-F1) and against NURD (report.write_paired_comparisons)."""
    return report.write_paired_comparisons(
        _read_job_metrics(job_metrics),
        datasets=datasets,
        seed=seed,
        bootstrap=bootstrap,
        csv=csv,
        md=md,
    )


def cost_table(*, jobs: list[str], benchmarks: list[str], csv: str, md: str) -> pd.DataFrame:
    """Rule cost_table: seconds per job and per checkpoint, with the rules' benchmark totals."""
    job_rows = pd.concat([pd.read_parquet(p) for p in jobs], ignore_index=True)
    return report.write_cost_table(cost_per_method(job_rows), benchmarks, csv, md)
