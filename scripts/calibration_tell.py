"""Rule calibration_tell: a round's results told to the search storage in trial order."""

from stragglers.io import run_rule
from stragglers.rules.calibrate import tell

run_rule(
    snakemake.log[0],
    lambda: tell(
        params=dict(snakemake.params.search),
        dataset=snakemake.wildcards.dataset,
        round_=int(snakemake.wildcards.round),
        proposals=snakemake.input.proposals,
        results=list(snakemake.input.results),
        out=snakemake.output[0],
    ),
)
