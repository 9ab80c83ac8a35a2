"""Rule sensitivity_paper: a grid point's paper_methods and leader under `protocol: paper`."""

from stragglers.io import run_rule
from stragglers.rules.sensitivity import run_paper_protocol

run_rule(
    snakemake.log[0],
    lambda: run_paper_protocol(
        converted_dir=str(snakemake.input.manifest).rsplit("/", 1)[0],
        dataset=snakemake.wildcards.dataset,
        kind=snakemake.params.kind,
        replay=dict(snakemake.params.replay),
        job_metrics_file=snakemake.input.job_metrics,
        paper_methods=list(snakemake.params.paper_methods),
        method_params={k: dict(v or {}) for k, v in snakemake.params.method_params.items()},
        seed=int(snakemake.params.seed),
        out=snakemake.output[0],
    ),
)
