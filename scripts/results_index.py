"""Rule results_index: results/README.md, what every file in results/ is."""

from stragglers.io import run_rule
from stragglers.rules.report import results_index

run_rule(
    snakemake.log[0],
    lambda: results_index(
        datasets=list(snakemake.params.datasets),
        methods=list(snakemake.params.methods),
        config=dict(snakemake.params.config),
        out=snakemake.output[0],
    ),
)
