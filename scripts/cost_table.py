"""Rule cost_table: seconds per job and per checkpoint, with the rules' benchmark totals."""

from stragglers.io import run_rule
from stragglers.rules.evaluate import cost_table

run_rule(
    snakemake.log[0],
    lambda: cost_table(
        job_files=list(snakemake.input.jobs),
        benchmark_files=list(snakemake.input.benchmarks),
        out_csv=snakemake.output.csv,
        out_md=snakemake.output.md,
    ),
)
