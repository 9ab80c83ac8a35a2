# Stage 1: raw traces (generated, or local parts verified against their SHA256SUM) and their
# conversion to one Parquet file per job plus a manifest.


rule generate_trace:
    output:
        directory("resources/raw/{dataset}"),
    params:
        kind=lambda wc: dataset_config(wc.dataset)["kind"],
        generator=lambda wc: dataset_config(wc.dataset).get("generator", {}),
        seed=config["seed"],
    # measured: bench/suggest_resources.py (README, "Running on a cluster")
    # (5,000 generated jobs, 1.08 M tasks: 1.15 GB peak RSS, 58 CPU s)
    resources:
        mem_mb=1792,
        runtime=5,
    log:
        "logs/generate/{dataset}.log",
    benchmark:
        "benchmarks/generate/{dataset}.tsv"
    script:
        "../../scripts/generate_trace.py"


rule verify_local_trace:
    output:
        "resources/verified/{dataset}.json",
    params:
        raw_dir=lambda wc: dataset_config(wc.dataset)["raw_dir"],
        sha256sum=lambda wc: dataset_config(wc.dataset).get("sha256sum", ""),
    log:
        "logs/verify/{dataset}.log",
    script:
        "../../scripts/verify_local_trace.py"


# The downloaded files live in resources/download/<dataset>/, which is deliberately not a
# declared output: Snakemake deletes the outputs of a failed job, and an interrupted 20 GB
# transfer must keep its .part file to resume. The marker is written only when every file
# has been fetched and verified.
rule download_trace:
    output:
        "resources/download/{dataset}.done.json",
    params:
        kind=lambda wc: dataset_config(wc.dataset)["kind"],
        download=lambda wc: dataset_config(wc.dataset)["download"],
        folder=lambda wc: f"resources/download/{wc.dataset}",
    # network-bound, not measured here: 41 GB of Google parts at >= 1 MB/s in one job
    resources:
        runtime=720,
    log:
        "logs/download/{dataset}.log",
    benchmark:
        "benchmarks/download/{dataset}.tsv"
    script:
        "../../scripts/download_trace.py"


rule convert_trace:
    input:
        raw_input,
    output:
        directory("resources/converted/{dataset}"),
    params:
        raw_dir=lambda wc: raw_dir(wc.dataset),
        kind=lambda wc: dataset_config(wc.dataset)["kind"],
        n_shards=lambda wc: dataset_config(wc.dataset)["n_shards"],
        min_tasks=lambda wc: dataset_config(wc.dataset).get("min_tasks", 100),
        priorities=lambda wc: dataset_config(wc.dataset).get("production_priorities", [9, 10, 11]),
        grid=lambda wc: dataset_config(wc.dataset).get("replay", {}),
        latency_definition=lambda wc: dataset_config(wc.dataset).get(
            "latency_definition", "schedule_to_finish"
        ),
    # measured: bench/suggest_resources.py (README, "Running on a cluster")
    # (5,000 generated jobs: 1.67 GB peak RSS; a real-size part: 12 s, so 500 Google parts in
    # one job: 100 min)
    resources:
        mem_mb=2560,
        runtime=300,
    log:
        "logs/convert/{dataset}.log",
    benchmark:
        "benchmarks/convert/{dataset}.tsv"
    script:
        "../../scripts/convert_trace.py"
