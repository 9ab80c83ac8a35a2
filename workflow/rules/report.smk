# Stage 5: an index of results/ so the folder explains itself.


rule results_index:
    input:
        "results/tables/table3.md",
        "results/tables/cost.md",
        "results/tables/completion_time.md",
    output:
        "results/README.md",
    log:
        "logs/results_index.log",
    conda:
        "../../environment.yml"
    params:
        datasets=DATASETS,
        methods=METHODS,
        config=config,
    script:
        "../../scripts/results_index.py"
