"""Rule launch_predict: one launch-time method on one dataset (predictions, curve, simulation)."""

from pathlib import Path

from stragglers.io import run_rule
from stragglers.rules.launch import launch_predict

run_rule(
    snakemake.log[0],
    lambda: launch_predict(
        converted_dir=str(Path(snakemake.input.manifest).parent),
        dataset=snakemake.wildcards.dataset,
        kind=snakemake.params.kind,
        method=snakemake.wildcards.launch_method,
        params=dict(snakemake.params.method_params),
        launch_config=dict(snakemake.params.launch),
        straggler_quantile=float(snakemake.params.straggler_quantile),
        interval=float(snakemake.params.interval),
        repeats=int(snakemake.params.repeats),
        deadline_factors=[float(f) for f in snakemake.params.deadline_factors],
        seed=int(snakemake.params.seed),
        method_dirs=list(snakemake.params.method_dirs),
        out_tasks=snakemake.output.tasks,
        out_jobs=snakemake.output.jobs,
        out_curve=snakemake.output.curve,
        out_simulation=snakemake.output.simulation,
    ),
)
