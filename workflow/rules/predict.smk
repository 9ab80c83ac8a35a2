# Stage 2: one Snakemake job per (dataset, method, shard of trace jobs) runs the online replay.


rule predict:
    input:
        "resources/converted/{dataset}",
    output:
        tasks="results/{dataset}/predictions/{method}/shard-{shard}.tasks.parquet",
        jobs="results/{dataset}/predictions/{method}/shard-{shard}.jobs.parquet",
    params:
        kind=lambda wc: dataset_config(wc.dataset)["kind"],
        method_params=lambda wc: config["methods"][wc.method] or {},
        replay=lambda wc: {**config["replay"], **dataset_config(wc.dataset).get("replay", {})},
        seed=config["seed"],
        method_dirs=config.get("method_dirs", []),
    log:
        "logs/predict/{dataset}/{method}/shard-{shard}.log",
    benchmark:
        "benchmarks/predict/{dataset}/{method}/shard-{shard}.tsv"
    threads: 1
    script:
        "../../scripts/predict.py"
