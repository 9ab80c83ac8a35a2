# Stage 2: one Snakemake job per (dataset, method, shard of trace jobs) runs the online replay.


rule predict:
    input:
        manifest=CONVERTED_MANIFEST,
        shard_jobs=converted_shard,
        tuned=tuned_params_input,
        sources=method_sources,
    output:
        tasks="results/{dataset}/predictions/{method}/shard-{shard}.tasks.parquet",
        jobs="results/{dataset}/predictions/{method}/shard-{shard}.jobs.parquet",
    log:
        "logs/predict/{dataset}/{method}/shard-{shard}.log",
    benchmark:
        "benchmarks/predict/{dataset}/{method}/shard-{shard}.tsv"
    # Many short jobs: on a cluster, the profiles in workflow/profiles/ put them in group
    # "predict" (--groups predict=predict) and submit N per job (--group-components
    # predict=N), each paying the start-up cost once. Not a `group:` here: Snakemake checks
    # every grouped job's upstream DAG when it builds the DAG (a dry run of the full Google
    # configuration took 2x longer for it), and local runs ignore groups anyway.
    conda:
        "../../environment.yml"
    threads: 1
    # measured: bench/suggest_resources.py (docs/cluster.md)
    # (slowest method SOD: 420 MB peak RSS, 1.36 CPU s per trace job, x 100 jobs per shard)
    resources:
        mem_mb=768,
        runtime=7,
    params:
        kind=lambda wc: spec(wc.dataset).kind,
        method_name=lambda wc: method_of(wc.method)[0],
        method_params=lambda wc: method_of(wc.method)[1],
        replay=replay_input,
        seed=config["seed"],
        kill_delay=resume_kill_delay(),
        method_dirs=config.get("method_dirs", []),
        tuning_jobs=tuning_jobs(),
    script:
        "../../scripts/run.py"


# The paper's tuning protocol (optional): each method's grid on the tuning jobs only.
rule tune_method:
    input:
        manifest=CONVERTED_MANIFEST,
        converted_jobs=converted_all_shards,
        sources=method_sources,
    output:
        tuning="results/{dataset}/tuning/{method}.json",
    log:
        "logs/tune/{dataset}/{method}.log",
    benchmark:
        "benchmarks/tune/{dataset}/{method}.tsv"
    conda:
        "../../environment.yml"
    params:
        kind=lambda wc: spec(wc.dataset).kind,
        method_name=lambda wc: method_of(wc.method)[0],
        method_params=lambda wc: method_of(wc.method)[1],
        grid=lambda wc: TUNING["grids"][wc.method],
        replay=replay_input,
        seed=config["seed"],
        kill_delay=resume_kill_delay(),
        n_jobs=tuning_jobs(),
        method_dirs=config.get("method_dirs", []),
    script:
        "../../scripts/run.py"


rule tuning:
    input:
        tuning_targets(),
