"""Rule completion_time_table: mean reduction in job completion time, all datasets."""

from stragglers.io import run_rule
from stragglers.rules.simulate import completion_time_table

run_rule(
    snakemake.log[0],
    lambda: completion_time_table(
        unlimited_files=list(snakemake.input.unlimited),
        limited_files=list(snakemake.input.limited),
        datasets=list(snakemake.params.datasets),
        readings_files=list(snakemake.input.readings),
        out_csv=snakemake.output.csv,
        out_md=snakemake.output.md,
    ),
)
