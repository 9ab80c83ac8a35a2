"""Rule simulate_method: for one method, the completion-time simulation (Algorithms 2-3) and the
mitigation policies (relaunch / speculative copy / speculative resume)."""

from stragglers.io import run_rule
from stragglers.replay.protocols import resolve_rules
from stragglers.rules.simulate import simulate_method, simulate_policies_method

replay = snakemake.params.replay
rules = resolve_rules(replay.get("protocol", "causal"), replay.get("overrides"))
common = dict(
    task_files=list(snakemake.input.tasks),
    job_files=list(snakemake.input.jobs),
    grid_origin=float(replay["grid_origin"]),
    checkpoint_interval=float(replay["checkpoint_interval"]),
    machines=list(snakemake.params.machines),
    repeats=snakemake.params.repeats,
    seed=snakemake.params.seed,
)
kill_delay = snakemake.params.kill_delay


def simulate_both():
    simulate_method(
        **common,
        out=snakemake.output.simulation,
        aligned_timeline=rules.timeline == "aligned",
        relaunch=snakemake.params.relaunch,
    )
    simulate_policies_method(
        **common,
        resume_attempts=int(snakemake.params.resume_attempts),
        kill_delay=None if kill_delay is None else float(kill_delay),
        out=snakemake.output.policies,
    )


run_rule(snakemake.log[0], simulate_both)
