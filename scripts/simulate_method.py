"""Rule simulate_method: completion-time simulation (Algorithms 2-3) for one method."""

from stragglers.io import run_rule
from stragglers.replay.protocols import resolve_rules
from stragglers.rules.simulate import simulate_method

replay = snakemake.params.replay
rules = resolve_rules(replay.get("protocol", "causal"), replay.get("overrides"))

run_rule(
    snakemake.log[0],
    lambda: simulate_method(
        task_files=list(snakemake.input.tasks),
        job_files=list(snakemake.input.jobs),
        grid_origin=float(snakemake.params.replay["grid_origin"]),
        checkpoint_interval=float(snakemake.params.replay["checkpoint_interval"]),
        machines=list(snakemake.params.machines),
        repeats=snakemake.params.repeats,
        seed=snakemake.params.seed,
        out=snakemake.output[0],
        aligned_timeline=rules.timeline == "aligned",
        relaunch=snakemake.params.relaunch,
    ),
)
