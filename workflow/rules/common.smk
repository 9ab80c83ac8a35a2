# Input functions and config lookups shared by the rules.
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir)))  # the stragglers package, even when not installed

from stragglers.formats.dataset_spec import dataset_specs, plain_replay
from stragglers.launch import launch_datasets
from stragglers.methods import declared_cross_job, load_method_dirs, method_entry, method_files
from stragglers.rules.config import check_config, resolve_shipped_paths
from stragglers.rules.sensitivity import derived_datasets

load_method_dirs(config.get("method_dirs", []))
if (config.get("launch") or {}).get("methods"):
    # method_dirs serve launch-time models too (one registry mechanism)
    from stragglers.launch.methods import load_launch_method_dirs

    load_launch_method_dirs(config.get("method_dirs", []))

DATASETS = list(config["datasets"])
# datasets read from real traces (not generated): findings.md leads with them
REAL_DATASETS = [name for name in DATASETS if config["datasets"][name]["source"] != "generate"]
PROTOCOL = config["replay"].get("protocol", "causal")  # figure titles name it
METHODS = list(config["methods"])  # labels: a method's name, or an entry's own label


def method_of(label):
    """(method name, parameters) a label runs: its `methods` entry, or the method of that
    name with its defaults (a sensitivity method the config does not list)."""
    return method_entry(label, config["methods"].get(label))


# every check the schema cannot make (methods and their parameters, launch methods, local
# folders, sensitivity, calibration): a bad setting stops here, before any job
resolve_shipped_paths(config, workflow.basedir)
check_config(config)
LAUNCH_METHODS = list((config.get("launch") or {}).get("methods") or {})
LAUNCH_DATASETS = launch_datasets(config)
# the datasets `replicates` and `sensitivity` add (<dataset>@r<k>, <base>@s<i>t<j>, placed
# traces): ordinary datasets the default run does not ask for (workflow/rules/sensitivity.smk)
DERIVED_DATASETS = derived_datasets(config)
# every dataset's settings, checked and with their defaults, once (a bad one stops here, named):
# the rules read a dataset's settings from its spec (stragglers/formats/dataset_spec.py)
SPECS = dataset_specs(config, DERIVED_DATASETS)


def spec(dataset):
    return SPECS[dataset]


wildcard_constraints:
    dataset="|".join(map(re.escape, DATASETS + list(DERIVED_DATASETS))),
    method="|".join(map(re.escape, METHODS)),
    launch_method="|".join(map(re.escape, LAUNCH_METHODS or ["none"])),
    shard=r"\d+",


TUNING = config.get("tuning") or {}


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


def resume_kill_delay():
    """Speculative resume's tau_kill - tau_est (simulation.policies.kill_delay; null = one
    checkpoint interval): one setting for the simulator's resume policy and for the methods
    that model it (SRQuant, LASER, through ReplaySettings.kill_delay -> JobInfo.kill_delay)."""
    return config["simulation"].get("policies", {}).get("kill_delay")


def replay_input(wildcards):
    """The job's dataset's replay settings: the global `replay` overlaid with the dataset's
    own (a rule's `replay` parameter)."""
    return spec(wildcards.dataset).replay


def dataset_methods(dataset):
    """The methods run on a dataset: all, but only sensitivity.methods on a grid point."""
    return SENSITIVITY_METHODS if dataset in SENSITIVITY_POINTS else METHODS


def shards(dataset):
    return range(spec(dataset).n_shards)


def raw_dir(dataset):
    return {
        "generate": f"resources/raw/{dataset}",
        "download": f"resources/download/{dataset}",
        "local": spec(dataset).raw_dir,
    }[spec(dataset).source]


def prediction_files(dataset, method, part):
    return [
        f"results/{dataset}/predictions/{method}/shard-{shard}.{part}.parquet"
        for shard in shards(dataset)
    ]


def dataset_prediction_files(part):
    def inputs(wildcards):
        return [
            path
            for method in dataset_methods(wildcards.dataset)
            for path in prediction_files(wildcards.dataset, method, part)
        ]

    return inputs


def predict_benchmarks(wildcards):
    return [
        f"benchmarks/predict/{wildcards.dataset}/{method}/shard-{shard}.tsv"
        for method in METHODS
        for shard in shards(wildcards.dataset)
    ]


def paper_fingerprint_input(name):
    """results/fingerprint/<name> when the default run includes the paper-protocol replay
    (`paper_fingerprint`), else nothing."""
    if config.get("paper_fingerprint") and FINGERPRINT_METHODS:  # (fingerprint.smk)
        return f"results/fingerprint/{name}"
    return []


def final_targets():
    targets = [
        "results/tables/table3.csv",
        "results/tables/table3.md",
        "results/tables/fingerprint.csv",
        "results/tables/fingerprint.md",
        "results/tables/paired_comparisons.md",
        "results/tables/cost.md",
        "results/tables/completion_time.md",
        "results/tables/policies.md",
        "results/README.md",
        "results/findings.md",
        "results/figures/overview.png",
    ]
    # the held-out test (docs/fingerprint.md), when the run includes it
    held_out = paper_fingerprint_input("fingerprint.md")
    targets += [held_out] if held_out else []
    if LAUNCH_METHODS and LAUNCH_DATASETS:
        targets += [
            "results/tables/launch_table.md",
            "results/tables/launch_learning_curve.md",
            "results/tables/launch_simulation.md",
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


# --- scatter-gather conversion (stragglers/convert/layout.py): raw files known when the DAG is built
from stragglers.convert.layout import raw_layout

_LAYOUTS = {}


def layout(dataset):
    """The dataset's raw files and conversion groups (computed once per dataset)."""
    if dataset not in _LAYOUTS:
        _LAYOUTS[dataset] = raw_layout(spec(dataset).kind, spec(dataset).settings, raw_dir(dataset))
    return _LAYOUTS[dataset]


def convert_groups(dataset):
    return range(len(layout(dataset).groups))


def raw_files_input(dataset, files):
    """What must exist before `files` of a dataset are read: the generated folder, the
    verification marker of a local folder, or each file's own download marker."""
    source = spec(dataset).source
    if source == "generate":
        return [f"resources/raw/{dataset}"]
    if source == "download":
        return [f"resources/download/{dataset}.files/{name}.json" for name in files]
    return [f"resources/verified/{dataset}.json"]


def prepare_input(wildcards):
    tables = layout(wildcards.dataset).tables
    return raw_files_input(wildcards.dataset, tables["task_events"] + tables["machine_events"])


def prepared_input(dataset):
    if spec(dataset).kind == "google-2011":
        return {"prepared": f"resources/convert/{dataset}/prepared"}
    return {}


def convert_part_input(wildcards):
    # the group's parts, and the machine tables when this stage reads them (events kind, Alibaba)
    files = layout(wildcards.dataset).group_inputs(int(wildcards.group))
    return {"raw": raw_files_input(wildcards.dataset, files), **prepared_input(wildcards.dataset)}


def spill_dirs(dataset):
    return [f"resources/convert/{dataset}/spill/group-{group}" for group in convert_groups(dataset)]


def gather_shard_input(wildcards):
    return {"spills": spill_dirs(wildcards.dataset), **prepared_input(wildcards.dataset)}


def convert_manifest_input(wildcards):
    dataset = wildcards.dataset
    stage_reports = [
        f"resources/convert/{dataset}/reports/group-{group}.json"
        for group in convert_groups(dataset)
    ]
    if spec(dataset).kind == "google-2011":
        stage_reports.insert(0, f"resources/convert/{dataset}/prepared")
    return {
        "stage_reports": stage_reports,
        "shard_manifests": [
            f"resources/convert/{dataset}/shards/shard-{shard}.parquet" for shard in shards(dataset)
        ],
        "shard_reports": [
            f"resources/convert/{dataset}/shards/shard-{shard}.json" for shard in shards(dataset)
        ],
    }


def download_markers(wildcards):
    return [
        f"resources/download/{wildcards.dataset}.files/{name}.json"
        for name in layout(wildcards.dataset).files
    ]


def download_file_input(wildcards):
    """A Google part is verified against the bucket's SHA256SUM, fetched first."""
    if spec(wildcards.dataset).kind.startswith("google"):
        return {"checksums": f"resources/download/{wildcards.dataset}.sha256sum.json"}
    return {}


# a pattern, not an input function: Snakemake inspects a function's signature at every call,
# once per job of the DAG
CONVERTED_MANIFEST = "resources/converted/{dataset}/manifest.parquet"


def converted_shard(wildcards):
    """A prediction job's input besides the manifest: its own shard's job files. A cross-job
    method (START) learns from earlier jobs of any shard and reads every shard; the manifest,
    which rule convert_manifest writes only once every shard is gathered (and rewrites when
    one is), already orders it after all of them. Listing the 84 shard folders of a full
    Google run for each of its 84 jobs made Snakemake compare each with the 500 inputs of
    their gather_shard job when building the DAG: 14,000 such scans per method
    (docs/cost.md, "Conversion and the DAG at full size")."""
    if declared_cross_job(method_of(wildcards.method)[0]):
        return []
    return f"resources/converted/{wildcards.dataset}/jobs/shard-{wildcards.shard}"


_SOURCE_INPUTS = {}  # files -> inputs: source_path once per method, not once per job


def _source_inputs(files):
    """Files that define a method, as the inputs of its jobs: the package's through
    workflow.source_path (so a cluster job receives them with the workflow's sources), a
    `method_dirs` file as it is."""
    if files not in _SOURCE_INPUTS:
        rules_dir = Path(workflow.basedir) / "workflow" / "rules"
        _SOURCE_INPUTS[files] = [
            (
                workflow.source_path(os.path.relpath(path, rules_dir))
                if path.is_relative_to(Path(workflow.basedir).resolve())
                else str(path)
            )
            for path in files
        ]
    return _SOURCE_INPUTS[files]


def method_sources(wildcards):
    """The files that define the method a label runs, its module and the package modules it
    builds on (stragglers.methods.method_files): editing one reruns that method's jobs."""
    return _source_inputs(tuple(method_files(method_of(wildcards.method)[0])))


def launch_method_sources(wildcards):
    """As method_sources, for a launch-time model."""
    from stragglers.launch.methods import launch_method_files

    return _source_inputs(tuple(launch_method_files(wildcards.launch_method)))


def launch_outputs(kind):
    """Every (launch dataset, launch method)'s `kind` output of rule launch_predict."""
    return [
        f"results/{dataset}/launch/{method}.{kind}.parquet"
        for dataset in LAUNCH_DATASETS
        for method in LAUNCH_METHODS
    ]


def converted_all_shards(wildcards):
    return [
        f"resources/converted/{wildcards.dataset}/jobs/shard-{shard}"
        for shard in shards(wildcards.dataset)
    ]


# The reproduction audit (workflow/rules/audit.smk).
from stragglers.report.audit import VARIANTS as AUDIT_VARIANTS


def audit_replay(dataset):
    """The dataset's replay settings without protocol/overrides: each variant sets its own."""
    return plain_replay(spec(dataset).replay)


def audit_variant_files():
    return [f"results/{d}/audit/{v}.csv" for d in DATASETS for v in AUDIT_VARIANTS]


def audit_benchmark_files():
    return [f"benchmarks/audit/{d}/{v}.tsv" for d in DATASETS for v in AUDIT_VARIANTS]


def policy_setting(name, default):
    """A mitigation-policy setting (simulation.policies) or its default."""
    return config["simulation"].get("policies", {}).get(name, default)


# --- the findings page (workflow/rules/report.smk)
def findings_audit_input(wildcards):
    """The audit's table when `snakemake audit` made it (the audit is not in the default run)."""
    path = "results/tables/reproduction_audit.csv"
    return [path] if Path(path).exists() else []


def config_files():
    """The config files this run read, relative to the working directory (the findings
    page names them)."""
    import os

    names = dict.fromkeys(os.path.relpath(f) for f in workflow.configfiles)
    return ", ".join(names) or "config/config.yaml"
