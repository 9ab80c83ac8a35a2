"""Rule fingerprint_replay: one method with a paper row over a dataset under `protocol: paper`."""

from pathlib import Path

from stragglers.io import run_rule
from stragglers.rules.fingerprint import fingerprint_replay

run_rule(
    snakemake.log[0],
    lambda: fingerprint_replay(
        converted_dir=str(Path(snakemake.input.manifest).parent),
        dataset=snakemake.wildcards.dataset,
        kind=snakemake.params.kind,
        method=snakemake.wildcards.fingerprint_method,
        params=dict(snakemake.params.method_params),
        replay=dict(snakemake.params.replay),
        seed=int(snakemake.params.seed),
        tuning_jobs=int(snakemake.params.tuning_jobs),
        out=snakemake.output[0],
    ),
)
