"""Rule policies_report: PoCD / machine time / reduction per method and policy, one dataset."""

from stragglers.io import run_rule
from stragglers.rules.simulate import policies_report

run_rule(
    snakemake.log[0],
    lambda: policies_report(
        simulation_files=list(snakemake.input),
        dataset=snakemake.wildcards.dataset,
        deadline_factors=[float(d) for d in snakemake.params.deadline_factors],
        out_csv=snakemake.output.csv,
        out_pocd_png=snakemake.output.pocd,
        out_reduction_png=snakemake.output.reduction,
        protocol=snakemake.params.protocol,
        seed=int(snakemake.params.seed),
        bootstrap=dict(snakemake.params.bootstrap),
    ),
)
