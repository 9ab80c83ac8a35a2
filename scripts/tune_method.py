"""Rule tune_method: the paper's tuning protocol for one method on one dataset's tuning jobs."""

from pathlib import Path

from stragglers.io import run_rule
from stragglers.replay.core import ReplaySettings
from stragglers.rules.predict import tune_method

run_rule(
    snakemake.log[0],
    lambda: tune_method(
        converted_dir=Path(snakemake.input.manifest).parent,
        dataset=snakemake.wildcards.dataset,
        kind=snakemake.params.kind,
        method=snakemake.params.method,
        label=snakemake.wildcards.method,
        params=dict(snakemake.params.method_params),
        grid=dict(snakemake.params.grid),
        settings=ReplaySettings(**snakemake.params.replay, kill_delay=snakemake.params.kill_delay),
        seed=snakemake.params.seed,
        n_jobs=snakemake.params.n_jobs,
        out=snakemake.output[0],
        method_dirs=list(snakemake.params.method_dirs),
    ),
)
