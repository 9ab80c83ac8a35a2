"""Rule paired_comparisons: every method against the best and against NURD (paired bootstrap)."""

from stragglers.io import run_rule
from stragglers.rules.evaluate import paired_comparisons

run_rule(
    snakemake.log[0],
    lambda: paired_comparisons(
        job_metric_files=list(snakemake.input.job_metrics),
        datasets=list(snakemake.params.datasets),
        seed=int(snakemake.params.seed),
        bootstrap=dict(snakemake.params.bootstrap),
        out_csv=snakemake.output.csv,
        out_md=snakemake.output.md,
    ),
)
