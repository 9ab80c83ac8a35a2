"""Rule predict: replay one method over one shard of a dataset's jobs."""

from pathlib import Path

from stragglers.io import run_rule
from stragglers.replay.core import ReplaySettings
from stragglers.rules.predict import predict_shard

run_rule(
    snakemake.log[0],
    lambda: predict_shard(
        converted_dir=Path(snakemake.input.manifest).parent,
        dataset=snakemake.wildcards.dataset,
        kind=snakemake.params.kind,
        shard=int(snakemake.wildcards.shard),
        method=snakemake.params.method,
        label=snakemake.wildcards.method,
        params=dict(snakemake.params.method_params),
        settings=ReplaySettings(**snakemake.params.replay, kill_delay=snakemake.params.kill_delay),
        seed=snakemake.params.seed,
        out_tasks=snakemake.output.tasks,
        out_jobs=snakemake.output.jobs,
        method_dirs=list(snakemake.params.method_dirs),
        tuning_jobs=snakemake.params.tuning_jobs,
        tuned_params=snakemake.input.tuned or None,
    ),
)
