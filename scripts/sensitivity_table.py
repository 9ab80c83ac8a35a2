"""Rule sensitivity_table: the map, who leads where, and its figure (docs/sensitivity.md)."""

from stragglers.io import run_rule
from stragglers.rules.sensitivity import sensitivity_tables

points = dict(snakemake.params.points)
run_rule(
    snakemake.log[0],
    lambda: sensitivity_tables(
        points=points,
        job_metric_files={
            n: [snakemake.input[f"metrics_{n}"], snakemake.input[f"paper_{n}"]] for n in points
        },
        policy_files={n: snakemake.input[f"policies_{n}"] for n in points},
        predictability_files={n: snakemake.input[f"measure_{n}"] for n in points},
        placed_files={d: snakemake.input[f"place_{d}"] for d in snakemake.params.placed},
        seed=int(snakemake.params.seed),
        bootstrap=dict(snakemake.params.bootstrap),
        out_csv=snakemake.output.csv,
        out_md=snakemake.output.md,
        out_leaders_csv=snakemake.output.leaders,
        out_png=snakemake.output.png,
    ),
)
