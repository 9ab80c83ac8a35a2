"""Rules: what the Snakemake rules call, one module per workflow/rules/*.smk.

scripts/*.py read `snakemake.input/params/output` and call one function here; everything
takes plain paths and values, so it can be tested without Snakemake.
"""
