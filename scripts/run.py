"""Every rule's script: the rule's function in stragglers/rules (docs/layout.md)."""

from stragglers.rules import run

run(snakemake)
