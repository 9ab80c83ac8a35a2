# Stage 5: an index of results/ so the folder explains itself.


rule results_index:
    input:
        "results/tables/table3.md",
        "results/tables/cost.md",
        "results/tables/completion_time.md",
    output:
        "results/README.md",
    params:
        datasets=DATASETS,
        methods=METHODS,
        config=config,
    log:
        "logs/results_index.log",
    script:
        "../../scripts/results_index.py"
