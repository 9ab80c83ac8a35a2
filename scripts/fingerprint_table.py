"""Rule fingerprint_table: the run's Table 3 fingerprint under its own protocol."""

from stragglers.io import run_rule
from stragglers.rules.fingerprint import run_fingerprint_table

run_rule(
    snakemake.log[0],
    lambda: run_fingerprint_table(
        table3_file=snakemake.input.table3,
        paper_table=snakemake.input.paper,
        kinds=dict(snakemake.params.kinds),
        protocols=dict(snakemake.params.protocols),
        bootstrap=dict(snakemake.params.bootstrap),
        out_csv=snakemake.output.csv,
        out_md=snakemake.output.md,
        out_distances=snakemake.output.distances,
    ),
)
