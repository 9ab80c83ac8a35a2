# Stage 1: raw traces (generated, or local parts verified against their SHA256SUM) and their
# conversion to one Parquet file per job plus a manifest.


rule generate_trace:
    output:
        raw=directory("resources/raw/{dataset}"),
    log:
        "logs/generate/{dataset}.log",
    benchmark:
        "benchmarks/generate/{dataset}.tsv"
    conda:
        "../../environment.yml"
    # measured: bench/suggest_resources.py (docs/cluster.md)
    # (5,000 generated jobs, 1.08 M tasks: 1.15 GB peak RSS, 58 CPU s)
    resources:
        mem_mb=1792,
        runtime=5,
    params:
        kind=lambda wc: spec(wc.dataset).kind,
        generator=lambda wc: spec(wc.dataset).generator,
        seed=config["seed"],
    script:
        "../../scripts/run.py"


rule verify_local_trace:
    output:
        verified="resources/verified/{dataset}.json",
    log:
        "logs/verify/{dataset}.log",
    conda:
        "../../environment.yml"
    params:
        raw_dir=lambda wc: spec(wc.dataset).raw_dir,
        sha256sum=lambda wc: spec(wc.dataset).sha256sum,
    script:
        "../../scripts/run.py"


# The downloaded files live in resources/download/<dataset>/, which is deliberately not a
# declared output: Snakemake deletes the outputs of a failed job, and an interrupted 20 GB
# transfer must keep its .part file to resume. Each file has its own job and a marker written
# only once the file is fetched and verified; `--resources download_slots=N` bounds how many
# run at once (each job holds one slot). The files are the layout's (stragglers/convert/layout.py):
# with `download.machine_tables` (default true) the machine tables too, Google's machine_events
# part (verified with SHA256SUM) and Alibaba 2018's machine_meta / machine_usage archives
# (verified with download.machine_meta_sha256 / machine_usage_sha256).
rule download_checksums:
    output:
        checksums="resources/download/{dataset}.sha256sum.json",
    log:
        "logs/download/{dataset}/SHA256SUM.log",
    conda:
        "../../environment.yml"
    resources:
        download_slots=1,
    params:
        download=lambda wc: spec(wc.dataset).download,
        folder=lambda wc: f"resources/download/{wc.dataset}",
    script:
        "../../scripts/run.py"


rule download_file:
    input:
        unpack(download_file_input),
    output:
        marker="resources/download/{dataset}.files/{file}.json",
    log:
        "logs/download/{dataset}/{file}.log",
    benchmark:
        "benchmarks/download/{dataset}/{file}.tsv"
    conda:
        "../../environment.yml"
    resources:
        download_slots=1,
    params:
        kind=lambda wc: spec(wc.dataset).kind,
        download=lambda wc: spec(wc.dataset).download,
        folder=lambda wc: f"resources/download/{wc.dataset}",
    script:
        "../../scripts/run.py"


rule download_trace:
    input:
        markers=download_markers,
    output:
        done="resources/download/{dataset}.done.json",
    log:
        "logs/download/{dataset}.log",
    conda:
        "../../environment.yml"
    params:
        kind=lambda wc: spec(wc.dataset).kind,
        folder=lambda wc: f"resources/download/{wc.dataset}",
    script:
        "../../scripts/run.py"


# Conversion, scattered (stragglers/convert/layout.py): prepare (google-2011: the task events of every
# part) -> one convert_part job per group of raw parts (spills rows per shard) -> one
# gather_shard job per shard (its per-job files) -> convert_manifest (manifest + report.json).
rule convert_prepare:
    input:
        raw=prepare_input,
    output:
        prepared=directory("resources/convert/{dataset}/prepared"),
    log:
        "logs/convert/{dataset}/prepare.log",
    benchmark:
        "benchmarks/convert/{dataset}/prepare.tsv"
    conda:
        "../../environment.yml"
    params:
        raw_dir=lambda wc: raw_dir(wc.dataset),
        event_parts=lambda wc: layout(wc.dataset).tables["task_events"],
        machine_event_parts=lambda wc: layout(wc.dataset).tables["machine_events"],
        n_shards=lambda wc: spec(wc.dataset).n_shards,
        min_tasks=lambda wc: spec(wc.dataset).min_tasks,
        priorities=lambda wc: spec(wc.dataset).production_priorities,
    script:
        "../../scripts/run.py"


rule convert_part:
    input:
        unpack(convert_part_input),
    output:
        spill=temp(directory("resources/convert/{dataset}/spill/group-{group}")),
        report="resources/convert/{dataset}/reports/group-{group}.json",
    log:
        "logs/convert/{dataset}/group-{group}.log",
    benchmark:
        "benchmarks/convert/{dataset}/group-{group}.tsv"
    conda:
        "../../environment.yml"
    # measured: bench/bench_convert.py, one real-size task_usage part (2.49 M rows) in a fresh
    # process: 969 MB peak RSS, 11.3 s CPU (load average 1.2); headroom rule of
    # bench/suggest_resources.py (1.5x memory rounded up to 256 MB, 3x CPU time, at least
    # 5 min), which bench_convert.py checks this request against. With convert.parts_per_job
    # above 1, the machine-usage sums grow with the cells of every part in the group.
    resources:
        mem_mb=1536,
        runtime=5,
    params:
        kind=lambda wc: spec(wc.dataset).kind,
        raw_dir=lambda wc: raw_dir(wc.dataset),
        parts=lambda wc: layout(wc.dataset).groups[int(wc.group)],
        n_shards=lambda wc: spec(wc.dataset).n_shards,
        min_tasks=lambda wc: spec(wc.dataset).min_tasks,
        priorities=lambda wc: spec(wc.dataset).production_priorities,
        grid=lambda wc: spec(wc.dataset).grid,
        machine_event_parts=lambda wc: layout(wc.dataset).tables.get("machine_events", []),
        configured_files=lambda wc: layout(wc.dataset).files,
    script:
        "../../scripts/run.py"


rule gather_shard:
    input:
        unpack(gather_shard_input),
    output:
        jobs=directory("resources/converted/{dataset}/jobs/shard-{shard}"),
        manifest="resources/convert/{dataset}/shards/shard-{shard}.parquet",
        report="resources/convert/{dataset}/shards/shard-{shard}.json",
    log:
        "logs/convert/{dataset}/shard-{shard}.log",
    benchmark:
        "benchmarks/convert/{dataset}/shard-{shard}.tsv"
    conda:
        "../../environment.yml"
    params:
        kind=lambda wc: spec(wc.dataset).kind,
        min_tasks=lambda wc: spec(wc.dataset).min_tasks,
        latency_definition=lambda wc: spec(wc.dataset).latency_definition,
    script:
        "../../scripts/run.py"


rule convert_manifest:
    input:
        unpack(convert_manifest_input),
    output:
        manifest="resources/converted/{dataset}/manifest.parquet",
        report="resources/converted/{dataset}/report.json",
    log:
        "logs/convert/{dataset}/manifest.log",
    conda:
        "../../environment.yml"
    params:
        kind=lambda wc: spec(wc.dataset).kind,
    script:
        "../../scripts/run.py"
