"""Rule calibration_tables: every trial, the distance per round, the best settings and the
figure of ours against the paper (results/calibration/)."""

from stragglers.io import run_rule
from stragglers.rules.calibrate import tables

run_rule(
    snakemake.log[0],
    lambda: tables(
        calibration=dict(snakemake.params.calibration),
        datasets=dict(snakemake.params.datasets),
        outs={f"out_{name}": path for name, path in snakemake.output.items()},
    ),
)
