# Replicates (`snakemake --cores 2 replicates`) and the sensitivity map (`snakemake --cores 2
# sensitivity`): their traces are ordinary datasets (DERIVED_DATASETS, common.smk), run by the
# stage rules unchanged; the rules here measure them and build the tables (docs/sensitivity.md).
from stragglers.rules.sensitivity import (
    active_sensitivity,
    grid_points,
    point_name,
    replicate_name,
    sensitivity_table_inputs,
    sensitivity_target,
)

SENSITIVITY = active_sensitivity(config)
SENSITIVITY_POINTS = (
    {point_name(SENSITIVITY["base"], p["signal"], p["tail"]): p for p in grid_points(SENSITIVITY)}
    if SENSITIVITY
    else {}
)
SENSITIVITY_METHODS = list(SENSITIVITY.get("methods", []))
# every dataset of the run and the placed ones (the real rows, when configured) on the map
PLACED_DATASETS = DATASETS + [d for d in DERIVED_DATASETS if d in SENSITIVITY.get("place", {})]
REPLICATES = {
    dataset: {
        replicate: replicate_name(dataset, replicate)
        for replicate in range(1, config.get("replicates", 1) + 1)
    }
    for dataset in DATASETS
    if spec(dataset).source == "generate"
}


rule predictability:
    input:
        manifest=CONVERTED_MANIFEST,
        converted_jobs=converted_all_shards,
    output:
        json="results/{dataset}/predictability.json",
        csv="results/{dataset}/predictability.csv",
    log:
        "logs/predictability/{dataset}.log",
    benchmark:
        "benchmarks/predictability/{dataset}.tsv"
    conda:
        "../../environment.yml"
    params:
        kind=lambda wc: spec(wc.dataset).kind,
        replay=replay_input,
        seed=config["seed"],
    script:
        "../../scripts/run.py"


rule sensitivity_paper:
    input:
        manifest=CONVERTED_MANIFEST,
        converted_jobs=converted_all_shards,
        job_metrics="results/{dataset}/evaluation/job_metrics.csv",
    output:
        paper_job_metrics="results/{dataset}/sensitivity/paper_job_metrics.csv",
    log:
        "logs/sensitivity/{dataset}/paper.log",
    benchmark:
        "benchmarks/sensitivity/{dataset}/paper.tsv"
    conda:
        "../../environment.yml"
    params:
        kind=lambda wc: spec(wc.dataset).kind,
        replay=replay_input,
        paper_methods=SENSITIVITY.get("paper_methods", ["NURD"]),
        method_params=config["methods"],
        seed=config["seed"],
    script:
        "../../scripts/run.py"


rule sensitivity_table:
    input:
        unpack(lambda wc: sensitivity_table_inputs(list(SENSITIVITY_POINTS), PLACED_DATASETS)),
    output:
        csv="results/tables/sensitivity.csv",
        leaders="results/tables/sensitivity_leaders.csv",
        md=report(
            "results/tables/sensitivity.md",
            caption="../report/sensitivity.rst",
            category="Sensitivity",
        ),
        png=report(
            "results/figures/sensitivity.png",
            caption="../report/sensitivity.rst",
            category="Sensitivity",
        ),
    log:
        "logs/tables/sensitivity.log",
    benchmark:
        "benchmarks/tables/sensitivity.tsv"
    conda:
        "../../environment.yml"
    params:
        points=SENSITIVITY_POINTS,
        placed=PLACED_DATASETS,
        seed=config["seed"],
        bootstrap=config["evaluation"],
    script:
        "../../scripts/run.py"


rule sensitivity:
    input:
        lambda wc: sensitivity_target(
            config,
            [
                "results/tables/sensitivity.csv",
                "results/tables/sensitivity.md",
                "results/figures/sensitivity.png",
            ],
        ),


rule replicate_table:
    input:
        job_metrics=[
            f"results/{name}/evaluation/job_metrics.csv"
            for replicates in REPLICATES.values()
            for name in replicates.values()
        ],
    output:
        csv="results/tables/replicates.csv",
        md=report(
            "results/tables/replicates.md",
            caption="../report/replicates.rst",
            category="Replicates",
        ),
    log:
        "logs/tables/replicates.log",
    conda:
        "../../environment.yml"
    params:
        replicates=REPLICATES,
    script:
        "../../scripts/run.py"


rule replicates:
    input:
        "results/tables/replicates.csv",
        "results/tables/replicates.md",
