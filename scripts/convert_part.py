"""Rule convert_part: one group of raw parts -> window rows spilled per shard + a report."""

from stragglers.convert.layout import convert_part
from stragglers.io import run_rule

run_rule(
    snakemake.log[0],
    lambda: convert_part(
        kind=snakemake.params.kind,
        raw_dir=snakemake.params.raw_dir,
        parts=list(snakemake.params.parts),
        out_dir=snakemake.output.spill,
        out_report=snakemake.output.report,
        dataset=snakemake.wildcards.dataset,
        n_shards=snakemake.params.n_shards,
        min_tasks=snakemake.params.min_tasks,
        priorities=list(snakemake.params.priorities),
        grid=dict(snakemake.params.grid),
        prepared_dir=snakemake.input.get("prepared"),
        machine_event_parts=list(snakemake.params.machine_event_parts),
        configured_files=list(snakemake.params.configured_files),
    ),
)
