"""Rule simulation_report: completion-time tables and figures for one dataset."""

from stragglers.io import run_rule
from stragglers.rules.simulate import simulation_report

run_rule(
    snakemake.log[0],
    lambda: simulation_report(
        simulation_files=list(snakemake.input),
        dataset=snakemake.wildcards.dataset,
        out_unlimited_csv=snakemake.output.unlimited_csv,
        out_limited_csv=snakemake.output.limited_csv,
        out_unlimited_png=snakemake.output.unlimited,
        out_by_machines_png=snakemake.output.by_machines,
        out_limited_mean_png=snakemake.output.limited_mean,
        out_readings_csv=snakemake.output.readings_csv,
    ),
)
