# The generator's calibration (`snakemake --cores N calibrate`, docs/calibration.md): per
# generated dataset in calibration.datasets, a static chain of rounds. Round r's proposals
# (asked of Optuna, seeded) need round r-1 told; each proposal is one trial job (small traces,
# the calibration methods under `protocol: paper`, the fingerprint distance), so a round's
# trials run in parallel on the cores or through a cluster profile; the round is told in
# trial order. Every trial is kept in results/calibration/<dataset>/study.db.
from stragglers.rules.calibrate import (
    CHECK_METHODS,
    check_outputs,
    check_params,
    last_rounds,
    previous_round,
    round_trials,
    search_params,
    target_inputs,
)

CALIBRATION = config.get("calibration") or {}


# the storage's readers and writers run where Snakemake runs, so on a cluster the SQLite file
# is written by one process on one machine, never by compute nodes over a network file system
localrules:
    calibration_propose,
    calibration_tell,
    calibration_tables,
    calibration_check_table,
    calibrate,


CALIBRATION_DATASETS = list(CALIBRATION.get("datasets", []))


rule calibration_propose:
    input:
        previous=lambda wc: previous_round(wc.dataset, int(wc.round)),
    output:
        proposals="results/calibration/{dataset}/round-{round}/proposals.json",
    log:
        "logs/calibration/{dataset}/round-{round}/propose.log",
    conda:
        "../../environment.yml"
    params:
        search=lambda wc: search_params(config, wc.dataset),
    script:
        "../../scripts/run.py"


rule calibration_trial:
    input:
        proposals="results/calibration/{dataset}/round-{round}/proposals.json",
        paper=workflow.source_path("../../stragglers/data/paper_table3.csv"),
        target=lambda wc: target_inputs(config, wc.dataset, CALIBRATION["methods"]),
    output:
        result="results/calibration/{dataset}/round-{round}/trial-{trial}.json",
    log:
        "logs/calibration/{dataset}/round-{round}/trial-{trial}.log",
    benchmark:
        "benchmarks/calibration/{dataset}/round-{round}/trial-{trial}.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    # measured (docs/calibration.md): 2 seeds x 5 jobs, 11 methods: 44-83 CPU s, 520-560 MB peak
    resources:
        mem_mb=1024,
        runtime=10,
    params:
        search=lambda wc: search_params(config, wc.dataset),
    script:
        "../../scripts/run.py"


rule calibration_tell:
    input:
        proposals="results/calibration/{dataset}/round-{round}/proposals.json",
        results=lambda wc: round_trials(wc.dataset, int(wc.round), CALIBRATION["batch"]),
    output:
        told="results/calibration/{dataset}/round-{round}/told.json",
    log:
        "logs/calibration/{dataset}/round-{round}/tell.log",
    conda:
        "../../environment.yml"
    params:
        search=lambda wc: search_params(config, wc.dataset),
    script:
        "../../scripts/run.py"


rule calibration_tables:
    input:
        told=lambda wc: last_rounds(CALIBRATION, config["datasets"]),
    output:
        trials="results/calibration/trials.csv",
        rounds_csv="results/calibration/rounds.csv",
        rounds_md=report(
            "results/calibration/rounds.md",
            caption="../report/calibration_rounds.rst",
            category="Calibration",
        ),
        best="results/calibration/best_settings.yaml",
        methods_csv="results/calibration/methods.csv",
        figure=report(
            "results/calibration/methods.png",
            caption="../report/calibration_methods.rst",
            category="Calibration",
        ),
        row_floor_csv="results/calibration/row_floor.csv",
        row_floor_md=report(
            "results/calibration/row_floor.md",
            caption="../report/calibration_row_floor.rst",
            category="Calibration",
        ),
    log:
        "logs/calibration/tables.log",
    conda:
        "../../environment.yml"
    params:
        calibration=CALIBRATION,
        datasets={d: config["datasets"].get(d) for d in CALIBRATION_DATASETS},
    script:
        "../../scripts/run.py"


# the fit checked on seeds the search never used, with the validation set (docs/calibration.md)
rule calibration_check:
    input:
        best="results/calibration/best_settings.yaml",
        paper=workflow.source_path("../../stragglers/data/paper_table3.csv"),
        target=lambda wc: target_inputs(config, wc.dataset, CHECK_METHODS),
    output:
        result="results/calibration/check/{dataset}/{label}-seed-{seed}.json",
    log:
        "logs/calibration/check/{dataset}/{label}-seed-{seed}.log",
    benchmark:
        "benchmarks/calibration/check/{dataset}/{label}-seed-{seed}.tsv"
    wildcard_constraints:
        label="start|best",
        seed=r"\d+",
    conda:
        "../../environment.yml"
    threads: 1
    # 21 methods on check_n_jobs jobs; XGBOD is most of it
    resources:
        mem_mb=1024,
        runtime=30,
    params:
        check_params=lambda wc: check_params(config, wc.dataset),
    script:
        "../../scripts/run.py"


rule calibration_check_table:
    input:
        check_results=check_outputs(CALIBRATION) if CALIBRATION else [],
    output:
        csv="results/calibration/check.csv",
        summary_csv="results/calibration/check_summary.csv",
        md=report(
            "results/calibration/check.md",
            caption="../report/calibration_check.rst",
            category="Calibration",
        ),
    log:
        "logs/calibration/check.log",
    conda:
        "../../environment.yml"
    script:
        "../../scripts/run.py"


rule calibrate:
    input:
        rules.calibration_tables.output,
        lambda wc: (rules.calibration_check_table.output if CALIBRATION.get("check_seeds") else []),
