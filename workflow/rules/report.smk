# Stage 5: an index of results/ so the folder explains itself.


rule results_index:
    input:
        tables=[
            "results/tables/table3.md",
            "results/tables/cost.md",
            "results/tables/completion_time.md",
        ],
    output:
        index="results/README.md",
    log:
        "logs/results_index.log",
    conda:
        "../../environment.yml"
    params:
        datasets=DATASETS,
        methods=METHODS,
        config=config,
    script:
        "../../scripts/run.py"


rule findings:
    input:
        table3="results/tables/table3.csv",
        paired="results/tables/paired_comparisons.csv",
        completion="results/tables/completion_time.csv",
        policies="results/tables/policies.csv",
        audit=findings_audit_input,
        fingerprint="results/tables/fingerprint_distances.csv",
        fingerprint_paper=lambda wc: paper_fingerprint_input("fingerprint.csv"),
        fingerprint_paper_distances=lambda wc: paper_fingerprint_input("fingerprint_distances.csv"),
        real_distances=lambda wc: paper_fingerprint_input("real_distances.csv"),
    output:
        md=report("results/findings.md", caption="../report/findings.rst", category="Findings"),
        sources="results/findings.sources.csv",
    log:
        "logs/findings.log",
    conda:
        "../../environment.yml"
    params:
        datasets=DATASETS,
        real_datasets=REAL_DATASETS,
        protocol=PROTOCOL,
        config_name=config_files(),
    script:
        "../../scripts/run.py"


rule overview:
    input:
        table3="results/tables/table3.csv",
        policies="results/tables/policies.csv",
    output:
        figure=report(
            "results/figures/overview.png",
            caption="../report/overview.rst",
            category="Overview",
        ),
    log:
        "logs/overview.log",
    conda:
        "../../environment.yml"
    params:
        datasets=DATASETS,
        protocol=PROTOCOL,
    script:
        "../../scripts/run.py"
