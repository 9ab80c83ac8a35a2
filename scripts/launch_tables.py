"""Rule launch_tables: launch-time Table 3, learning curve (MTL Table 5 / Fig. 3), hold-back simulation."""

from stragglers.io import run_rule
from stragglers.rules.launch import launch_tables

run_rule(
    snakemake.log[0],
    lambda: launch_tables(
        tasks=list(snakemake.input.tasks),
        jobs=list(snakemake.input.jobs),
        curves=list(snakemake.input.curves),
        simulations=list(snakemake.input.simulations),
        deadline_factors=[float(f) for f in snakemake.params.deadline_factors],
        out_table_csv=snakemake.output.table_csv,
        out_table_md=snakemake.output.table_md,
        out_curve_csv=snakemake.output.curve_csv,
        out_curve_md=snakemake.output.curve_md,
        out_simulation_csv=snakemake.output.simulation_csv,
        out_simulation_md=snakemake.output.simulation_md,
        figure_dir="results",
    ),
)
