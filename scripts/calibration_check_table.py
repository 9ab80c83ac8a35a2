"""Rule calibration_check_table: the check's distances per seed and over the seeds."""

from stragglers.io import run_rule
from stragglers.rules.calibrate import check_table

run_rule(
    snakemake.log[0],
    lambda: check_table(
        results=list(snakemake.input),
        outs={
            "out_csv": snakemake.output.csv,
            "out_summary_csv": snakemake.output.summary_csv,
            "out_md": snakemake.output.md,
        },
    ),
)
