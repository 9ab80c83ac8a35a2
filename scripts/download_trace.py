"""Rule download_trace: fetch a dataset's raw files, verified, resuming interrupted transfers."""
from stragglers.pipeline import download_trace, run_rule

run_rule(snakemake.log[0], lambda: download_trace(
    kind=snakemake.params.kind,
    download=dict(snakemake.params.download),
    folder=snakemake.params.folder,
    out=snakemake.output[0],
))
