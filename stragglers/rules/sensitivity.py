"""What the replicate and sensitivity rules call (workflow/rules/sensitivity.smk). Both targets
make their extra traces ordinary datasets, so the stage rules run them unchanged: replicate k
of a generated dataset D is `D@r<k>` (D with the generator seed `replicate_seed`), grid point
(i, j) of the map is `<base>@s<i>t<j>` (the i-th signal and j-th tail settings, the base's
seed), and `sensitivity.place` entries are measured and marked on the map. Config names
cannot contain "@", so a derived name never clashes (docs/sensitivity.md).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stragglers.io import write_csv_atomic, write_text_atomic

log = logging.getLogger(__name__)

SIGNAL_KNOBS = ("signature_strength", "feature_noise")
TAIL_KNOBS = ("heavy_tail_job_fraction", "heavy_tail_severity")


def replicate_seed(seed: int, replicate: int) -> int:
    """The generator seed of replicate `replicate` (1 = `seed` itself): a SeedSequence of
    (seed, replicate), so seeds are reproducible from the config and distinct across replicates."""
    if replicate < 1:
        raise ValueError(f"replicates are numbered from 1, got {replicate}")
    if replicate == 1:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(replicate)]).generate_state(1)[0])


def generator_seed(config: dict, dataset: dict) -> int:
    return int((dataset.get("generator") or {}).get("seed", config["seed"]))


def replicate_name(dataset: str, replicate: int) -> str:
    return dataset if replicate == 1 else f"{dataset}@r{replicate}"


def point_name(base: str, signal: int, tail: int) -> str:
    return f"{base}@s{signal}t{tail}"


def replicate_datasets(config: dict) -> dict[str, dict]:
    """`<dataset>@r<k>` for k = 2..replicates, for every generated dataset."""
    out = {}
    for name, dataset in config["datasets"].items():
        if dataset["source"] != "generate":
            continue
        for replicate in range(2, int(config.get("replicates", 1)) + 1):
            seed = replicate_seed(generator_seed(config, dataset), replicate)
            generator = {**(dataset.get("generator") or {}), "seed": seed}
            out[replicate_name(name, replicate)] = {**dataset, "generator": generator}
    return out


def grid_points(sensitivity: dict) -> list[dict[str, Any]]:
    """One entry per grid point: signal index i, tail index j, and their generator settings."""
    return [
        {"signal": i, "tail": j, "settings": {**signal, **tail}}
        for i, signal in enumerate(sensitivity["signal"], start=1)
        for j, tail in enumerate(sensitivity["tail"], start=1)
    ]


def active_sensitivity(config: dict) -> dict:
    """The `sensitivity` section when its base is a dataset of the run, else {}: a config that
    keeps the default section but runs other datasets still loads (the `sensitivity` target
    then says why it cannot run, `sensitivity_target`)."""
    sensitivity = config.get("sensitivity") or {}
    if sensitivity and sensitivity["base"] not in config["datasets"]:
        return {}
    return sensitivity


def sensitivity_target(config: dict, outputs: list[str]) -> list[str]:
    """The `sensitivity` target's inputs, or a clear error when the map is not defined."""
    sensitivity = config.get("sensitivity")
    if not sensitivity:
        raise ValueError("config has no `sensitivity` section: the map is not defined")
    if not active_sensitivity(config):
        raise ValueError(
            f"config sensitivity.base: {sensitivity['base']!r} is not a dataset of this run "
            f"(datasets: {sorted(config['datasets'])})"
        )
    return outputs


def check_sensitivity(config: dict, methods: list[str]) -> None:
    """Settings the schema cannot check, named: the base dataset and the methods (`methods`:
    every method the registry knows; one that `methods` does not configure runs with its
    default parameters, so a config that trims `methods` still loads)."""
    sensitivity = config.get("sensitivity")
    if not sensitivity:
        return
    base = sensitivity["base"]
    if base not in config["datasets"]:
        log.warning(
            "config sensitivity.base %r is not a dataset of this run: no sensitivity map", base
        )
    elif config["datasets"][base]["source"] != "generate":
        generated = [n for n, d in config["datasets"].items() if d["source"] == "generate"]
        raise ValueError(
            f"config sensitivity.base: {base!r} is not a generated dataset of `datasets` "
            f"(generated: {generated})"
        )
    for key in ("methods", "paper_methods"):
        unknown = [m for m in sensitivity.get(key, []) if m not in methods]
        if unknown:
            raise ValueError(
                f"config sensitivity.{key}: {unknown} are not known methods (known: {methods})"
            )
    for name in sensitivity.get("place") or {}:
        if name in config["datasets"]:
            raise ValueError(
                f"config sensitivity.place.{name}: already a dataset of the run (every dataset "
                "of the run is placed on the map anyway)"
            )


def sensitivity_datasets(config: dict) -> dict[str, dict]:
    sensitivity = active_sensitivity(config)
    if not sensitivity:
        return {}
    base_name = sensitivity["base"]
    base = config["datasets"][base_name]
    seed = generator_seed(config, base)
    out = {}
    for point in grid_points(sensitivity):
        generator = {
            **(base.get("generator") or {}),
            **point["settings"],
            "n_jobs": int(sensitivity["n_jobs"]),
            "seed": seed,
        }
        out[point_name(base_name, point["signal"], point["tail"])] = {
            **base,
            "generator": generator,
        }
    return out


def placed_datasets(config: dict) -> dict[str, dict]:
    """`sensitivity.place` entries whose raw folder exists (the others: a warning)."""
    out = {}
    for name, dataset in (active_sensitivity(config).get("place") or {}).items():
        raw = dataset.get("raw_dir")
        if dataset["source"] == "local" and not (raw and Path(raw).exists()):
            log.warning("sensitivity.place.%s: raw_dir %s does not exist; not placed", name, raw)
            continue
        out[name] = dataset
    return out


def derived_datasets(config: dict) -> dict[str, dict]:
    """Every dataset the replicate and sensitivity targets add (name -> dataset settings)."""
    return {**replicate_datasets(config), **sensitivity_datasets(config), **placed_datasets(config)}


def sensitivity_table_inputs(points: list[str], placed: list[str]) -> dict[str, str]:
    """The sensitivity_table rule's named inputs: per grid point its job metrics (configured
    protocol and paper), policy summary and predictability; per placed dataset its
    predictability (names as the rule's function, sensitivity_table, reads them)."""
    per_point = {
        "metrics": "results/{}/evaluation/job_metrics.csv",
        "paper": "results/{}/sensitivity/paper_job_metrics.csv",
        "policies": "results/{}/policies/summary.csv",
        "measure": "results/{}/predictability.json",
    }
    inputs = {f"{key}_{p}": path.format(p) for key, path in per_point.items() for p in points}
    inputs.update({f"place_{d}": f"results/{d}/predictability.json" for d in placed})
    return inputs


# ---------------------------------------------------------------------------------------------
# rule entry points


def predictability(
    *,
    manifest: str,
    converted_jobs: Any,
    json: str,
    csv: str,
    dataset: str,
    kind: str,
    replay: dict,
    seed: int,
) -> dict:
    """Rule predictability: the predictability and tail of the converted dataset whose manifest
    is `manifest` (`converted_jobs`: ordering only), summary to `json`, per job to `csv`."""
    from stragglers.replay.predictability import dataset_predictability, write_predictability

    converted_dir = str(Path(manifest).parent)
    per_job, summary = dataset_predictability(converted_dir, kind, dict(replay), int(seed))
    write_predictability(per_job, summary, json, csv)
    log.info("%s: %s", converted_dir, summary)
    return summary


def sensitivity_paper(
    *,
    manifest: str,
    converted_jobs: Any,
    job_metrics: str,
    paper_job_metrics: str,
    dataset: str,
    kind: str,
    replay: dict,
    paper_methods: list[str],
    method_params: dict[str, dict],
    seed: int,
) -> pd.DataFrame:
    """Rule sensitivity_paper: `paper_methods` and the point's leader by F1 under the
    configured protocol (Table 3's best non-privileged method, from `job_metrics`), re-run
    under `protocol: paper` on the converted dataset whose manifest is `manifest`: per-job
    metrics as evaluate_dataset writes them, the method named `<method> (paper)`."""
    from stragglers.evaluate.bootstrap import best_method
    from stragglers.evaluate.metrics import summary_table
    from stragglers.replay.service import protocol_job_metrics

    causal = pd.read_csv(job_metrics, dtype={"job_id": str})
    leader = best_method(summary_table(causal), "F1")
    chosen = list(dict.fromkeys([*paper_methods, *([leader] if leader else [])]))
    metrics = protocol_job_metrics(
        converted_dir=str(Path(manifest).parent),
        dataset=dataset,
        kind=kind,
        methods={name: dict(method_params.get(name) or {}) for name in chosen},
        replay=dict(replay),
        protocol="paper",
        seed=int(seed),
    )
    metrics["method"] = metrics["method"] + " (paper)"
    write_csv_atomic(metrics, paper_job_metrics)
    return metrics


def sensitivity_table(
    *,
    csv: str,
    leaders: str,
    md: str,
    png: str,
    points: dict[str, dict],
    placed: list[str],
    seed: int,
    bootstrap: dict,
    **inputs: str,
) -> pd.DataFrame:
    """Rule sensitivity_table: each point's outputs (`inputs`, named as
    sensitivity_table_inputs names them) -> the map, who leads where, and its figure
    (stragglers/report/sensitivity.py)."""
    from stragglers.report.sensitivity import write_sensitivity

    return write_sensitivity(
        points,
        placed,
        inputs,
        seed=seed,
        bootstrap=bootstrap,
        csv=csv,
        leaders=leaders,
        md=md,
        png=png,
    )


def replicate_table(
    *,
    job_metrics: list[str],
    csv: str,
    md: str,
    replicates: dict[str, dict[int, str]],
) -> pd.DataFrame:
    """Rule replicate_table: per method, spread and rank across replicates (rank stability).
    replicates: base dataset -> {replicate number: its dataset name}; `job_metrics`: those
    datasets' results/<name>/evaluation/job_metrics.csv."""
    from stragglers.report import sensitivity as report

    by_name = {Path(path).parent.parent.name: path for path in job_metrics}
    frames = []
    for dataset, names in replicates.items():
        for replicate, name in names.items():
            metrics = pd.read_csv(by_name[name], dtype={"job_id": str})
            frames.append(report.replicate_summary(metrics, dataset, int(replicate)))
    summaries = pd.concat(frames, ignore_index=True)
    table = report.replicate_table(summaries)
    write_csv_atomic(table, csv)
    write_text_atomic(report.replicate_markdown(table), md)
    return table
