"""Rule audit_variant: every audit method under one protocol variant on one dataset."""

from pathlib import Path

from stragglers.io import run_rule
from stragglers.report.audit import run_variant

run_rule(
    snakemake.log[0],
    lambda: run_variant(
        converted_dir=Path(snakemake.input.manifest).parent,
        dataset=snakemake.wildcards.dataset,
        kind=snakemake.params.kind,
        variant=snakemake.wildcards.variant,
        replay=dict(snakemake.params.replay),
        methods={k: dict(v) for k, v in snakemake.params.methods.items()},
        n_jobs=int(snakemake.params.n_jobs),
        seed=snakemake.params.seed,
        machines=list(snakemake.params.machines),
        repeats=snakemake.params.repeats,
        relaunch=snakemake.params.relaunch,
        out=snakemake.output[0],
    ),
)
