"""Rule simulate_method: completion-time simulation (Algorithms 2-3) for one method."""
from stragglers.pipeline import simulate_method, run_rule

run_rule(snakemake.log[0], lambda: simulate_method(
    task_files=list(snakemake.input.tasks),
    job_files=list(snakemake.input.jobs),
    grid_origin=float(snakemake.params.replay["grid_origin"]),
    checkpoint_interval=float(snakemake.params.replay["checkpoint_interval"]),
    machines=list(snakemake.params.machines),
    repeats=snakemake.params.repeats,
    seed=snakemake.params.seed,
    out=snakemake.output[0],
))
