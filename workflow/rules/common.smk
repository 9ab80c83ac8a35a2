# Input functions and config lookups shared by the rules.
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir)))  # the stragglers package, even when not installed

from stragglers.methods import available_methods, load_method_dirs

load_method_dirs(config.get("method_dirs", []))

DATASETS = list(config["datasets"])
METHODS = list(config["methods"])

_unknown = sorted(set(METHODS) - set(available_methods()))
if _unknown:
    raise ValueError(
        f"config methods: unknown method(s) {_unknown}; available: {available_methods()}"
    )
for _name, _ds in config["datasets"].items():
    if _ds["source"] == "local" and not Path(_ds["raw_dir"]).exists():
        raise ValueError(f"config datasets.{_name}.raw_dir: {_ds['raw_dir']} does not exist")


wildcard_constraints:
    dataset="|".join(map(re.escape, DATASETS)),
    method="|".join(map(re.escape, METHODS)),
    shard=r"\d+",


TUNING = config.get("tuning") or {}
for _method in TUNING.get("grids", {}):
    if _method not in METHODS:
        raise ValueError(f"config tuning.grids: {_method} is not among the configured methods")


def tuning_jobs():
    """Jobs per dataset set aside for tuning (left out of every evaluation), 0 without tuning."""
    return TUNING.get("n_jobs", 6) if TUNING else 0


def tuned_params_input(wildcards):
    if TUNING.get("apply") and wildcards.method in TUNING.get("grids", {}):
        return f"results/{wildcards.dataset}/tuning/{wildcards.method}.json"
    return []


def tuning_targets():
    return [
        f"results/{dataset}/tuning/{method}.json"
        for dataset in DATASETS
        for method in TUNING.get("grids", {})
    ]


def dataset_config(dataset):
    return config["datasets"][dataset]


def shards(dataset):
    return range(dataset_config(dataset)["n_shards"])


def raw_input(wildcards):
    source = dataset_config(wildcards.dataset)["source"]
    if source == "generate":
        return f"resources/raw/{wildcards.dataset}"
    if source == "download":
        return f"resources/download/{wildcards.dataset}.done.json"
    return f"resources/verified/{wildcards.dataset}.json"


def raw_dir(dataset):
    ds = dataset_config(dataset)
    return {
        "generate": f"resources/raw/{dataset}",
        "download": f"resources/download/{dataset}",
        "local": ds.get("raw_dir"),
    }[ds["source"]]


def prediction_files(dataset, method, part):
    return [
        f"results/{dataset}/predictions/{method}/shard-{shard}.{part}.parquet"
        for shard in shards(dataset)
    ]


def dataset_prediction_files(part):
    def inputs(wildcards):
        return [
            path
            for method in METHODS
            for path in prediction_files(wildcards.dataset, method, part)
        ]

    return inputs


def predict_benchmarks(wildcards):
    return [
        f"benchmarks/predict/{wildcards.dataset}/{method}/shard-{shard}.tsv"
        for method in METHODS
        for shard in shards(wildcards.dataset)
    ]


def final_targets():
    targets = [
        "results/tables/table3.csv",
        "results/tables/table3.md",
        "results/tables/cost.md",
        "results/tables/completion_time.md",
        "results/tables/policies.md",
        "results/README.md",
    ]
    for dataset in DATASETS:
        targets += [
            f"results/{dataset}/figures/f1_over_time.png",
            f"results/{dataset}/figures/lead.png",
            f"results/{dataset}/figures/reduction_unlimited.png",
            f"results/{dataset}/figures/reduction_by_machines.png",
            f"results/{dataset}/figures/reduction_limited_mean.png",
            f"results/{dataset}/figures/pocd_vs_machine_time.png",
            f"results/{dataset}/figures/reduction_by_policy.png",
        ]
    return targets
