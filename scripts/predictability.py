"""Rule predictability: a converted dataset's predictability and tail (docs/sensitivity.md)."""

from stragglers.io import run_rule
from stragglers.rules.sensitivity import measure_predictability

run_rule(
    snakemake.log[0],
    lambda: measure_predictability(
        converted_dir=str(snakemake.input.manifest).rsplit("/", 1)[0],
        kind=snakemake.params.kind,
        replay=dict(snakemake.params.replay),
        seed=int(snakemake.params.seed),
        out_json=snakemake.output.json,
        out_csv=snakemake.output.csv,
    ),
)
