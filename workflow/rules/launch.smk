# Launch-time, cross-job models (Wrangler, MTL; stragglers/launch, docs/definitions.md, "Launch-time
# prediction"): one job per (dataset, launch method) reads every converted job's launch rows,
# then one job makes the tables and figures.


rule launch_predict:
    input:
        manifest=CONVERTED_MANIFEST,
        converted_jobs=converted_all_shards,
        sources=launch_method_sources,
    output:
        tasks="results/{dataset}/launch/{launch_method}.tasks.parquet",
        jobs="results/{dataset}/launch/{launch_method}.jobs.parquet",
        curve="results/{dataset}/launch/{launch_method}.curve.parquet",
        simulation="results/{dataset}/launch/{launch_method}.simulation.parquet",
    log:
        "logs/launch/{dataset}/{launch_method}.log",
    benchmark:
        "benchmarks/launch/{dataset}/{launch_method}.tsv"
    conda:
        "../../environment.yml"
    params:
        kind=lambda wc: spec(wc.dataset).kind,
        method_params=lambda wc: config["launch"]["methods"][wc.launch_method] or {},
        launch=lambda wc: {k: v for k, v in config["launch"].items() if k != "methods"},
        straggler_quantile=config["replay"].get("straggler_quantile", 0.9),
        interval=lambda wc: spec(wc.dataset).grid.get("checkpoint_interval", 300),
        repeats=config["simulation"]["repeats"],
        deadline_factors=config["simulation"]
        .get("policies", {})
        .get("deadline_factors", [1.0, 1.1, 1.25]),
        seed=config["seed"],
        method_dirs=config.get("method_dirs", []),
    script:
        "../../scripts/run.py"


rule launch_tables:
    input:
        tasks=launch_outputs("tasks"),
        jobs=launch_outputs("jobs"),
        curves=launch_outputs("curve"),
        simulations=launch_outputs("simulation"),
    output:
        table_csv="results/tables/launch_table.csv",
        table_md="results/tables/launch_table.md",
        curve_csv="results/tables/launch_learning_curve.csv",
        curve_md="results/tables/launch_learning_curve.md",
        simulation_csv="results/tables/launch_simulation.csv",
        simulation_md="results/tables/launch_simulation.md",
        figures=expand(
            "results/{dataset}/figures/launch_learning_curve.png", dataset=LAUNCH_DATASETS
        ),
    log:
        "logs/launch/tables.log",
    conda:
        "../../environment.yml"
    params:
        deadline_factors=config["simulation"]
        .get("policies", {})
        .get("deadline_factors", [1.0, 1.1, 1.25]),
    script:
        "../../scripts/run.py"
