"""Rule generate_trace: write the embedded synthetic trace in its raw format."""

from stragglers.io import run_rule
from stragglers.rules.data import generate_trace

run_rule(
    snakemake.log[0],
    lambda: generate_trace(
        kind=snakemake.params.kind,
        out_dir=snakemake.output[0],
        generator=dict(snakemake.params.generator),
        seed=snakemake.params.seed,
    ),
)
