# Stage 4: job completion time when predicted stragglers are relaunched (Algorithms 2-3).


# One job per (dataset, method) runs both simulations of its predictions: the completion time
# under relaunch (Algorithms 2-3) and the mitigation policies with deadlines. One process instead
# of two halves the start-up paid per method (bench/run_split.py).
rule simulate_method:
    input:
        tasks=lambda wc: prediction_files(wc.dataset, wc.method, "tasks"),
        jobs=lambda wc: prediction_files(wc.dataset, wc.method, "jobs"),
    output:
        simulation="results/{dataset}/simulation/{method}.parquet",
        policies="results/{dataset}/policies/{method}.parquet",
    log:
        "logs/simulate/{dataset}/{method}.log",
    benchmark:
        "benchmarks/simulate/{dataset}/{method}.tsv"
    conda:
        "../../environment.yml"
    # bench/suggest_resources.py's headroom (1.5x peak RSS) over the job at the full Google
    # size: 570 MB peak, 17.8 CPU s (bench/stage_cpu.py --tile 176, docs/cost.md)
    resources:
        mem_mb=1024,
        runtime=8,
    params:
        replay=replay_input,
        repeats=config["simulation"]["repeats"],
        machines=config["simulation"]["machines"],
        seed=config["seed"],
        relaunch=config["simulation"].get("relaunch", "from_flag"),
        resume_attempts=policy_setting("resume_attempts", 2),
        kill_delay=resume_kill_delay(),
    script:
        "../../scripts/run.py"


rule simulation_report:
    input:
        simulations=expand("results/{{dataset}}/simulation/{method}.parquet", method=METHODS),
    output:
        unlimited_csv="results/{dataset}/simulation/reduction_unlimited.csv",
        limited_csv="results/{dataset}/simulation/reduction_by_machines.csv",
        readings_csv="results/{dataset}/simulation/reduction_readings.csv",
        unlimited_png=report(
            "results/{dataset}/figures/reduction_unlimited.png",
            caption="../report/reduction_unlimited.rst",
            category="Completion time",
            subcategory="{dataset}",
        ),
        by_machines_png=report(
            "results/{dataset}/figures/reduction_by_machines.png",
            caption="../report/reduction_by_machines.rst",
            category="Completion time",
            subcategory="{dataset}",
        ),
        limited_mean_png=report(
            "results/{dataset}/figures/reduction_limited_mean.png",
            caption="../report/reduction_limited_mean.rst",
            category="Completion time",
            subcategory="{dataset}",
        ),
    log:
        "logs/simulate/{dataset}/report.log",
    conda:
        "../../environment.yml"
    script:
        "../../scripts/run.py"


rule completion_time_table:
    input:
        unlimited_files=expand(
            "results/{dataset}/simulation/reduction_unlimited.csv", dataset=DATASETS
        ),
        limited_files=expand(
            "results/{dataset}/simulation/reduction_by_machines.csv", dataset=DATASETS
        ),
        readings_files=expand(
            "results/{dataset}/simulation/reduction_readings.csv", dataset=DATASETS
        ),
    output:
        csv="results/tables/completion_time.csv",
        md=report(
            "results/tables/completion_time.md",
            caption="../report/completion_time.rst",
            category="Completion time",
        ),
    log:
        "logs/tables/completion_time.log",
    conda:
        "../../environment.yml"
    params:
        datasets=DATASETS,
    script:
        "../../scripts/run.py"


# Mitigation policies with deadlines: relaunch, speculative copy, speculative resume (simulated
# per method by rule simulate_method).
rule policies_report:
    input:
        simulation_files=lambda wc: [
            f"results/{wc.dataset}/policies/{method}.parquet"
            for method in dataset_methods(wc.dataset)
        ],
    output:
        csv="results/{dataset}/policies/summary.csv",
        pocd_png=report(
            "results/{dataset}/figures/pocd_vs_machine_time.png",
            caption="../report/pocd_vs_machine_time.rst",
            category="Mitigation policies",
            subcategory="{dataset}",
        ),
        reduction_png=report(
            "results/{dataset}/figures/reduction_by_policy.png",
            caption="../report/reduction_by_policy.rst",
            category="Mitigation policies",
            subcategory="{dataset}",
        ),
    log:
        "logs/policies/{dataset}/report.log",
    benchmark:
        "benchmarks/policies/{dataset}/report.tsv"
    conda:
        "../../environment.yml"
    params:
        deadline_factors=policy_setting("deadline_factors", [1.0, 1.1, 1.25]),
        seed=config["seed"],
        protocol=PROTOCOL,
        bootstrap=config["evaluation"],
    script:
        "../../scripts/run.py"


rule policies_table:
    input:
        files=expand("results/{dataset}/policies/summary.csv", dataset=DATASETS),
    output:
        csv="results/tables/policies.csv",
        md=report(
            "results/tables/policies.md",
            caption="../report/policies.rst",
            category="Mitigation policies",
        ),
    log:
        "logs/tables/policies.log",
    conda:
        "../../environment.yml"
    script:
        "../../scripts/run.py"
