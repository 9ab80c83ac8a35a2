"""Rule table3: the paper's Table 3 for every dataset, next to the published numbers."""

from stragglers.io import run_rule
from stragglers.rules.evaluate import table3

run_rule(
    snakemake.log[0],
    lambda: table3(
        job_metric_files=list(snakemake.input.job_metrics),
        datasets=list(snakemake.params.datasets),
        kinds=dict(snakemake.params.kinds),
        paper_table=snakemake.input.paper,
        out_csv=snakemake.output.csv,
        out_md=snakemake.output.md,
        out_summary=snakemake.output.summary,
        lead_files=list(snakemake.input.leads),
        seed=int(snakemake.params.seed),
        bootstrap=dict(snakemake.params.bootstrap),
        comparisons_file=snakemake.input.comparisons,
    ),
)
