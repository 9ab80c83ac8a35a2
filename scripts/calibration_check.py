"""Rule calibration_check: the starting or the best settings scored on one fresh seed."""

from stragglers.io import run_rule
from stragglers.rules.calibrate import score_check

run_rule(
    snakemake.log[0],
    lambda: score_check(
        params=dict(snakemake.params.check),
        dataset=snakemake.wildcards.dataset,
        label=snakemake.wildcards.label,
        seed=int(snakemake.wildcards.seed),
        best=snakemake.input.best,
        paper_table=snakemake.input.paper,
        out=snakemake.output[0],
    ),
)
