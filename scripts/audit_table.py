"""Rule audit_table: results/tables/reproduction_audit.{csv,md} and its figure."""

from stragglers.io import run_rule
from stragglers.report.audit import audit_table

run_rule(
    snakemake.log[0],
    lambda: audit_table(
        variant_files=list(snakemake.input.variants),
        datasets=dict(snakemake.params.datasets),
        methods={k: dict(v) for k, v in snakemake.params.methods.items()},
        headline=tuple(snakemake.params.headline),
        paper_table=snakemake.input.paper,
        benchmark_files=list(snakemake.input.benchmarks),
        out_csv=snakemake.output.csv,
        out_md=snakemake.output.md,
        out_png=snakemake.output.png,
    ),
)
