"""Rule convert_trace: raw parts -> one Parquet file per job + manifest + report.json."""
from stragglers.pipeline import convert_trace, run_rule

run_rule(snakemake.log[0], lambda: convert_trace(
    kind=snakemake.params.kind,
    raw_dir=snakemake.params.raw_dir,
    out_dir=snakemake.output[0],
    dataset=snakemake.wildcards.dataset,
    n_shards=snakemake.params.n_shards,
    min_tasks=snakemake.params.min_tasks,
    priorities=list(snakemake.params.priorities),
    grid=dict(snakemake.params.grid),
    latency_definition=snakemake.params.latency_definition,
))
