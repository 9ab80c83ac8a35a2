# Stage 3: per-job metrics, F1 over normalised time (Figures 2-3), Table 3 and the cost table.


rule evaluate_dataset:
    input:
        task_files=dataset_prediction_files("tasks"),
        job_files=dataset_prediction_files("jobs"),
    output:
        job_metrics="results/{dataset}/evaluation/job_metrics.csv",
        f1_per_job="results/{dataset}/evaluation/f1_over_time_per_job.csv",
        f1_mean="results/{dataset}/evaluation/f1_over_time.csv",
        figure=report(
            "results/{dataset}/figures/f1_over_time.png",
            caption="../report/f1_over_time.rst",
            category="Prediction",
            subcategory="{dataset}",
        ),
        leads="results/{dataset}/evaluation/leads.csv",
        lead_figure=report(
            "results/{dataset}/figures/lead.png",
            caption="../report/lead.rst",
            category="Prediction",
            subcategory="{dataset}",
        ),
    log:
        "logs/evaluate/{dataset}.log",
    benchmark:
        "benchmarks/evaluate/{dataset}.tsv"
    conda:
        "../../environment.yml"
    params:
        n_points=config["evaluation"]["f1_time_points"],
        protocol=PROTOCOL,
    script:
        "../../scripts/run.py"


rule paired_comparisons:
    input:
        job_metrics=expand("results/{dataset}/evaluation/job_metrics.csv", dataset=DATASETS),
    output:
        csv="results/tables/paired_comparisons.csv",
        md=report(
            "results/tables/paired_comparisons.md",
            caption="../report/paired_comparisons.rst",
            category="Prediction",
        ),
    log:
        "logs/tables/paired_comparisons.log",
    benchmark:
        "benchmarks/tables/paired_comparisons.tsv"
    conda:
        "../../environment.yml"
    params:
        datasets=DATASETS,
        seed=config["seed"],
        bootstrap=config["evaluation"],
    script:
        "../../scripts/run.py"


rule table3:
    input:
        job_metrics=expand("results/{dataset}/evaluation/job_metrics.csv", dataset=DATASETS),
        leads=expand("results/{dataset}/evaluation/leads.csv", dataset=DATASETS),
        comparisons="results/tables/paired_comparisons.csv",
        paper=workflow.source_path("../../stragglers/data/paper_table3.csv"),
    output:
        csv="results/tables/table3.csv",
        md=report(
            "results/tables/table3.md",
            caption="../report/table3.rst",
            category="Prediction",
        ),
        summary_csv="results/tables/summary_by_dataset.csv",
    log:
        "logs/tables/table3.log",
    benchmark:
        "benchmarks/tables/table3.tsv"
    conda:
        "../../environment.yml"
    params:
        datasets=DATASETS,
        kinds={name: spec(name).kind for name in DATASETS},
        seed=config["seed"],
        bootstrap=config["evaluation"],
    script:
        "../../scripts/run.py"


rule cost_table:
    input:
        jobs=[
            path
            for dataset in DATASETS
            for method in METHODS
            for path in prediction_files(dataset, method, "jobs")
        ],
        benchmarks=[
            f"benchmarks/predict/{dataset}/{method}/shard-{shard}.tsv"
            for dataset in DATASETS
            for method in METHODS
            for shard in shards(dataset)
        ],
    output:
        csv="results/tables/cost.csv",
        md=report("results/tables/cost.md", caption="../report/cost.rst", category="Cost"),
    log:
        "logs/tables/cost.log",
    conda:
        "../../environment.yml"
    script:
        "../../scripts/run.py"
