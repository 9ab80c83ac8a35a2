"""Rule overview: results/figures/overview.png, the figure to open first."""

import pandas as pd

from stragglers.io import run_rule
from stragglers.report.figures import plot_overview

run_rule(
    snakemake.log[0],
    lambda: plot_overview(
        pd.read_csv(snakemake.input.table3),
        pd.read_csv(snakemake.input.policies, dtype={"machines": str}),
        snakemake.output[0],
        datasets=list(snakemake.params.datasets),
        protocol=str(snakemake.params.protocol),
    ),
)
