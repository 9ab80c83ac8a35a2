"""Rule calibration_propose: round r's seeded proposals, asked of the dataset's search storage."""

from stragglers.io import run_rule
from stragglers.rules.calibrate import propose

run_rule(
    snakemake.log[0],
    lambda: propose(
        params=dict(snakemake.params.search),
        dataset=snakemake.wildcards.dataset,
        round_=int(snakemake.wildcards.round),
        out=snakemake.output[0],
    ),
)
