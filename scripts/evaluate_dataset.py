"""Rule evaluate_dataset: per-job metrics and F1 over normalised time for one dataset."""

from stragglers.io import run_rule
from stragglers.rules.evaluate import evaluate_dataset

run_rule(
    snakemake.log[0],
    lambda: evaluate_dataset(
        task_files=list(snakemake.input.tasks),
        job_files=list(snakemake.input.jobs),
        dataset=snakemake.wildcards.dataset,
        n_points=snakemake.params.n_points,
        out_job_metrics=snakemake.output.job_metrics,
        out_f1_per_job=snakemake.output.f1_per_job,
        out_f1_mean=snakemake.output.f1_mean,
        out_figure=snakemake.output.figure,
        protocol=snakemake.params.protocol,
        out_leads=snakemake.output.leads,
        out_lead_figure=snakemake.output.lead_figure,
    ),
)
