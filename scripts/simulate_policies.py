"""Rule simulate_policies: relaunch / speculative copy / speculative resume for one method."""

from stragglers.io import run_rule
from stragglers.rules.simulate import simulate_policies_method

run_rule(
    snakemake.log[0],
    lambda: simulate_policies_method(
        task_files=list(snakemake.input.tasks),
        job_files=list(snakemake.input.jobs),
        grid_origin=float(snakemake.params.replay["grid_origin"]),
        checkpoint_interval=float(snakemake.params.replay["checkpoint_interval"]),
        machines=list(snakemake.params.machines),
        repeats=snakemake.params.repeats,
        resume_attempts=int(snakemake.params.resume_attempts),
        kill_delay=None
        if snakemake.params.kill_delay is None
        else float(snakemake.params.kill_delay),
        seed=snakemake.params.seed,
        out=snakemake.output[0],
    ),
)
