"""Rule convert_manifest: the shards' pieces and every stage's report -> manifest + report.json."""

from pathlib import Path

from stragglers.convert.layout import manifest
from stragglers.io import run_rule

run_rule(
    snakemake.log[0],
    lambda: manifest(
        kind=snakemake.params.kind,
        dataset=snakemake.wildcards.dataset,
        shard_manifests=list(snakemake.input.shard_manifests),
        shard_reports=list(snakemake.input.shard_reports),
        stage_reports=list(snakemake.input.stage_reports),
        out_dir=str(Path(snakemake.output.manifest).parent),
    ),
)
