"""Rule policies_table: the policy/deadline table over datasets."""

from stragglers.io import run_rule
from stragglers.rules.simulate import policies_table

run_rule(
    snakemake.log[0],
    lambda: policies_table(
        files=list(snakemake.input),
        out_csv=snakemake.output.csv,
        out_md=snakemake.output.md,
    ),
)
