# The reproduction audit (`snakemake --cores 2 audit`): the paper's experiment, then one rule
# at a time to our causal protocol (stragglers/report/audit.py, docs/protocols.md).


rule audit_variant:
    input:
        manifest=CONVERTED_MANIFEST,
        converted_jobs=converted_all_shards,
    output:
        rows="results/{dataset}/audit/{variant}.csv",
    log:
        "logs/audit/{dataset}/{variant}.log",
    benchmark:
        "benchmarks/audit/{dataset}/{variant}.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    params:
        kind=lambda wc: spec(wc.dataset).kind,
        replay=lambda wc: audit_replay(wc.dataset),
        methods=config.get("audit", {}).get("methods", {}),
        n_jobs=config.get("audit", {}).get("n_jobs", 0),
        seed=config["seed"],
        machines=config["simulation"]["machines"],
        repeats=config["simulation"]["repeats"],
        relaunch=config["simulation"].get("relaunch", "from_flag"),
    script:
        "../../scripts/run.py"


rule audit_table:
    input:
        variants=audit_variant_files(),
        benchmarks=audit_benchmark_files(),
        paper=workflow.source_path("../../stragglers/data/paper_table3.csv"),
    output:
        csv="results/tables/reproduction_audit.csv",
        md=report(
            "results/tables/reproduction_audit.md",
            caption="../report/reproduction_audit.rst",
            category="Reproduction audit",
        ),
        png=report(
            "results/figures/reproduction_audit.png",
            caption="../report/reproduction_audit.rst",
            category="Reproduction audit",
        ),
    log:
        "logs/tables/reproduction_audit.log",
    conda:
        "../../environment.yml"
    params:
        datasets={name: spec(name).kind for name in DATASETS},
        methods=config.get("audit", {}).get("methods", {}),
        headline=config.get("audit", {}).get("nurd_lines", ["NURD a=0", "NURD a=0.5"]),
    script:
        "../../scripts/run.py"


rule audit:
    input:
        "results/tables/reproduction_audit.csv",
        "results/tables/reproduction_audit.md",
        "results/figures/reproduction_audit.png",
