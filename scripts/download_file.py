"""Rule download_file: one raw file, verified, resuming an interrupted transfer."""

from stragglers.convert.layout import download_file
from stragglers.io import run_rule

run_rule(
    snakemake.log[0],
    lambda: download_file(
        kind=snakemake.params.kind,
        download=dict(snakemake.params.download),
        folder=snakemake.params.folder,
        file=snakemake.wildcards.file,
        out=snakemake.output[0],
    ),
)
