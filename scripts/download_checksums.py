"""Rule download_checksums: the Google bucket's SHA256SUM, which every part is verified against."""

from stragglers.convert.layout import download_checksums
from stragglers.io import run_rule

run_rule(
    snakemake.log[0],
    lambda: download_checksums(
        download=dict(snakemake.params.download),
        folder=snakemake.params.folder,
        out=snakemake.output[0],
    ),
)
