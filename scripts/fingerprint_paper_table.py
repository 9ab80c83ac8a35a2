"""Rule fingerprint_paper_table: the Table 3 fingerprint of the replays under `protocol: paper`."""

from stragglers.io import run_rule
from stragglers.rules.fingerprint import paper_fingerprint_table

run_rule(
    snakemake.log[0],
    lambda: paper_fingerprint_table(
        job_metric_files=list(snakemake.input.job_metrics),
        datasets=list(snakemake.params.datasets),
        kinds=dict(snakemake.params.kinds),
        paper_table=snakemake.input.paper,
        seed=int(snakemake.params.seed),
        bootstrap=dict(snakemake.params.bootstrap),
        out_csv=snakemake.output.csv,
        out_md=snakemake.output.md,
        out_distances=snakemake.output.distances,
    ),
)
