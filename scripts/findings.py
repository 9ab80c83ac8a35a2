"""Rule findings: results/findings.md, the run's headline statements from its tables."""

from stragglers.io import run_rule
from stragglers.report.findings import write_findings

run_rule(
    snakemake.log[0],
    lambda: write_findings(
        table3=snakemake.input.table3,
        paired=snakemake.input.paired,
        completion=snakemake.input.completion,
        policies=snakemake.input.policies,
        audit=snakemake.input.audit[0] if snakemake.input.audit else None,
        datasets=list(snakemake.params.datasets),
        protocol=str(snakemake.params.protocol),
        config_name=str(snakemake.params.config_name),
        out_md=snakemake.output.md,
        out_sources=snakemake.output.sources,
        fingerprint=snakemake.input.fingerprint,
        fingerprint_paper=snakemake.input.fingerprint_paper or None,
        fingerprint_paper_distances=snakemake.input.fingerprint_paper_distances or None,
    ),
)
