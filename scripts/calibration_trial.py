"""Rule calibration_trial: one proposal scored (small traces, the calibration methods under
`protocol: paper`, the fingerprint distance)."""

from stragglers.io import run_rule
from stragglers.rules.calibrate import score_trial

run_rule(
    snakemake.log[0],
    lambda: score_trial(
        params=dict(snakemake.params.search),
        dataset=snakemake.wildcards.dataset,
        proposals=snakemake.input.proposals,
        index=int(snakemake.wildcards.trial),
        paper_table=snakemake.input.paper,
        out=snakemake.output[0],
    ),
)
