"""Rule verify_local_trace: check local raw parts against a SHA256SUM before they are used."""

from stragglers.io import run_rule
from stragglers.rules.data import verify_local_trace

run_rule(
    snakemake.log[0],
    lambda: verify_local_trace(
        raw_dir=snakemake.params.raw_dir,
        sha256sum=snakemake.params.sha256sum,
        out=snakemake.output[0],
    ),
)
