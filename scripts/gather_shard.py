"""Rule gather_shard: one shard's spilled rows from every part group -> its per-job files."""

from stragglers.convert.layout import gather
from stragglers.io import run_rule

run_rule(
    snakemake.log[0],
    lambda: gather(
        kind=snakemake.params.kind,
        spill_dirs=list(snakemake.input.spills),
        shard=int(snakemake.wildcards.shard),
        jobs_dir=snakemake.output.jobs,
        out_manifest=snakemake.output.manifest,
        out_report=snakemake.output.report,
        dataset=snakemake.wildcards.dataset,
        min_tasks=snakemake.params.min_tasks,
        latency_definition=snakemake.params.latency_definition,
        prepared_dir=snakemake.input.get("prepared"),
    ),
)
