"""Rule convert_prepare (google-2011): task events of every part -> kept tasks and their shards."""

from stragglers.convert.layout import prepare
from stragglers.io import run_rule

run_rule(
    snakemake.log[0],
    lambda: prepare(
        raw_dir=snakemake.params.raw_dir,
        event_parts=list(snakemake.params.event_parts),
        out_dir=snakemake.output[0],
        dataset=snakemake.wildcards.dataset,
        n_shards=snakemake.params.n_shards,
        min_tasks=snakemake.params.min_tasks,
        priorities=list(snakemake.params.priorities),
        machine_event_parts=list(snakemake.params.machine_event_parts),
    ),
)
