# The Table 3 fingerprint (docs/fingerprint.md): every run writes its own protocol's from
# Table 3; `snakemake --cores N fingerprint` replays every method with a paper row under
# `protocol: paper` (one job per dataset and method) and writes the `paper` one.
from stragglers.rules.fingerprint import (
    fingerprint_methods,
    fingerprint_target,
    protocol_label,
)

PAPER_TABLE3 = workflow.source_path("../../stragglers/data/paper_table3.csv")
# dataset -> its methods with a paper row (datasets without a counterpart in the paper: none)
FINGERPRINT_METHODS = fingerprint_methods(
    str(Path(workflow.basedir) / "stragglers" / "data" / "paper_table3.csv"),
    {name: spec(name).kind for name in DATASETS},
)


wildcard_constraints:
    fingerprint_method="|".join(
        map(re.escape, sorted({m for ms in FINGERPRINT_METHODS.values() for m in ms}) or ["none"])
    ),


rule fingerprint_table:
    input:
        table3="results/tables/table3.csv",
        paper=PAPER_TABLE3,
    output:
        csv="results/tables/fingerprint.csv",
        distances="results/tables/fingerprint_distances.csv",
        md=report(
            "results/tables/fingerprint.md",
            caption="../report/fingerprint.rst",
            category="Fingerprint",
        ),
    log:
        "logs/tables/fingerprint.log",
    conda:
        "../../environment.yml"
    params:
        kinds={name: spec(name).kind for name in DATASETS},
        protocols={name: protocol_label(spec(name).replay) for name in config["datasets"]},
        bootstrap=config["evaluation"],
    script:
        "../../scripts/run.py"


rule fingerprint_replay:
    input:
        manifest=CONVERTED_MANIFEST,
        converted_jobs=converted_all_shards,
    output:
        job_metrics="results/fingerprint/{dataset}/{fingerprint_method}.csv",
    log:
        "logs/fingerprint/{dataset}/{fingerprint_method}.log",
    benchmark:
        "benchmarks/fingerprint/{dataset}/{fingerprint_method}.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    params:
        kind=lambda wc: spec(wc.dataset).kind,
        method_params=lambda wc: config["methods"].get(wc.fingerprint_method) or {},
        replay=replay_input,
        seed=config["seed"],
        tuning_jobs=tuning_jobs(),
    script:
        "../../scripts/run.py"


rule fingerprint_paper_table:
    input:
        job_metrics=[
            f"results/fingerprint/{dataset}/{method}.csv"
            for dataset, methods in FINGERPRINT_METHODS.items()
            for method in methods
        ],
        paper=PAPER_TABLE3,
    output:
        csv="results/fingerprint/fingerprint.csv",
        distances="results/fingerprint/fingerprint_distances.csv",
        real_distances="results/fingerprint/real_distances.csv",
        real_per_job="results/fingerprint/real_distances_per_job.csv",
        md=report(
            "results/fingerprint/fingerprint.md",
            caption="../report/fingerprint_paper.rst",
            category="Fingerprint",
        ),
    log:
        "logs/fingerprint/fingerprint.log",
    benchmark:
        "benchmarks/fingerprint/table.tsv"
    conda:
        "../../environment.yml"
    params:
        datasets=list(FINGERPRINT_METHODS),
        kinds={name: spec(name).kind for name in FINGERPRINT_METHODS},
        real_datasets=REAL_DATASETS,
        seed=config["seed"],
        bootstrap=config["evaluation"],
    script:
        "../../scripts/run.py"


rule fingerprint:
    input:
        lambda wc: fingerprint_target(
            FINGERPRINT_METHODS,
            ["results/fingerprint/fingerprint.csv", "results/fingerprint/fingerprint.md"],
        ),
