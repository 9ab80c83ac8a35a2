"""Rule replicate_table: per method, spread and rank across replicates (rank stability)."""

from stragglers.io import run_rule
from stragglers.rules.sensitivity import replicate_tables

run_rule(
    snakemake.log[0],
    lambda: replicate_tables(
        replicates={
            dataset: {
                int(k): f"results/{name}/evaluation/job_metrics.csv" for k, name in names.items()
            }
            for dataset, names in snakemake.params.replicates.items()
        },
        out_csv=snakemake.output.csv,
        out_md=snakemake.output.md,
    ),
)
