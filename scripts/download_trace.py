"""Rule download_trace: every file of a dataset fetched and verified (the list of files)."""

from stragglers.convert.layout import download_done
from stragglers.io import run_rule

run_rule(
    snakemake.log[0],
    lambda: download_done(
        kind=snakemake.params.kind,
        folder=snakemake.params.folder,
        markers=list(snakemake.input),
        out=snakemake.output[0],
    ),
)
