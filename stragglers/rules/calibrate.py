"""What the calibration rules call (workflow/rules/calibrate.smk; docs/calibration.md): propose
a round, score one trial, tell a round, write the tables and the figure."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from stragglers.calibrate import check, outputs, search, trial
from stragglers.calibrate.settings import dataset_knobs, search_fingerprint, start_settings
from stragglers.io import dump_json

log = logging.getLogger(__name__)


def storage_path(dataset: str) -> str:
    """The dataset's search storage: every trial, across restarts (not a rule output, so
    Snakemake never deletes it)."""
    return f"results/calibration/{dataset}/study.db"


def round_folder(dataset: str, round_: int) -> str:
    return f"results/calibration/{dataset}/round-{round_}"


def previous_round(dataset: str, round_: int) -> list[str]:
    """What proposing round `round_` waits for: the previous round told (nothing for round 0)."""
    return [] if round_ == 0 else [f"{round_folder(dataset, round_ - 1)}/told.json"]


def round_trials(dataset: str, round_: int, batch: int) -> list[str]:
    return [f"{round_folder(dataset, round_)}/trial-{index}.json" for index in range(batch)]


def last_rounds(calibration: dict, config_datasets: dict) -> list[str]:
    """Each dataset's last round told: the tables are written once every round is."""
    if not calibration:
        raise ValueError(
            "config has no `calibration` section: `snakemake calibrate` has nothing to search "
            "(docs/calibration.md)"
        )
    missing = [d for d in calibration["datasets"] if d not in config_datasets]
    if missing:
        raise ValueError(
            f"config calibration.datasets: {missing[0]} is not a configured dataset: "
            f"{sorted(config_datasets)}"
        )
    last = calibration["rounds"] - 1
    return [f"{round_folder(d, last)}/told.json" for d in calibration["datasets"]]


def search_params(config: dict, dataset: str) -> dict[str, Any]:
    """Everything a dataset's search rules need, from the config (a rule parameter, so a change
    reruns them; `rounds` is left out: raising it continues the same search)."""
    section = config["calibration"]
    ds = config["datasets"][dataset]
    # trials always replay under `protocol: paper`: the run's protocol and its overrides are not
    # part of a search (a run under another protocol continues the same search)
    replay = {k: v for k, v in config["replay"].items() if k not in ("protocol", "overrides")}
    knobs = dataset_knobs(section, dataset)
    return {
        "dataset": ds,
        "kind": ds["kind"],
        "knobs": knobs,
        "start": start_settings(ds, knobs),
        "seeds": [int(s) for s in section["seeds"]],
        "n_jobs": int(section["n_jobs"]),
        "batch": int(section["batch"]),
        "sampler_seed": int(section["sampler_seed"]),
        "startup_trials": int(section["startup_trials"]),
        "methods": list(section["methods"]),
        "method_params": {m: dict(config["methods"].get(m) or {}) for m in section["methods"]},
        "replay": replay,
        "fingerprint": search_fingerprint(section, ds, replay, knobs),
    }


def check_params(config: dict, dataset: str) -> dict[str, Any]:
    """What a check job needs: the search's parameters (its trials' replay and dataset) and the
    validation set's method parameters. A parameter of its own, so a search's trials do not
    rerun when the check changes."""
    search_ = search_params(config, dataset)
    methods = [m for members in check.CHECK_SETS.values() for m in members]
    return {
        "dataset": search_["dataset"],
        "knobs": list(search_["knobs"]),
        "start": search_["start"],
        "replay": search_["replay"],
        "n_jobs": int(config["calibration"].get("check_n_jobs", search_["n_jobs"])),
        "check_method_params": {m: dict(config["methods"].get(m) or {}) for m in methods},
    }


def check_outputs(calibration: dict) -> list[str]:
    """Every check job's file: each dataset, starting and best settings, each check seed."""
    return [
        f"results/calibration/check/{dataset}/{label}-seed-{seed}.json"
        for dataset in calibration["datasets"]
        for label in check.SETTINGS_LABELS
        for seed in calibration.get("check_seeds", [])
    ]


def score_check(
    *, params: dict, dataset: str, label: str, seed: int, best: str, paper_table: str, out: str
) -> dict:
    settings = (
        params["start"]
        if label == "start"
        else check.best_generator_settings(best, dataset, params["knobs"])
    )
    result = check.check_trial(
        params=params,
        dataset=dataset,
        settings=settings,
        seed=seed,
        n_jobs=params["n_jobs"],
        paper_table=paper_table,
    )
    dump_json({"dataset": dataset, "label": label, **result}, out)
    return result


def check_table(*, results: list[str], outs: dict[str, str]):
    return check.write_check(results=[json.loads(Path(p).read_text()) for p in results], **outs)


def propose(*, params: dict, dataset: str, round_: int, out: str) -> list[dict]:
    return search.propose_round(
        storage_path=storage_path(dataset),
        fingerprint=params["fingerprint"],
        kind=params["kind"],
        knobs=params["knobs"],
        start=params["start"],
        round_=round_,
        batch=params["batch"],
        sampler_seed=params["sampler_seed"],
        startup_trials=params["startup_trials"],
        out=out,
    )


def score_trial(
    *, params: dict, dataset: str, proposals: str, index: int, paper_table: str, out: str
) -> dict:
    proposal = json.loads(Path(proposals).read_text())["trials"][index]
    result = trial.run_trial(
        dataset_name=dataset,
        dataset=params["dataset"],
        settings=proposal["settings"],
        seeds=params["seeds"],
        n_jobs=params["n_jobs"],
        methods=params["methods"],
        method_params=params["method_params"],
        replay=params["replay"],
        paper_table=paper_table,
    )
    dump_json({**proposal, **result}, out)
    return result


def tell(*, params: dict, dataset: str, round_: int, proposals: str, results: list[str], out: str):
    return search.tell_round(
        storage_path=storage_path(dataset),
        fingerprint=params["fingerprint"],
        round_=round_,
        sampler_seed=params["sampler_seed"],
        startup_trials=params["startup_trials"],
        proposals=json.loads(Path(proposals).read_text()),
        results=[json.loads(Path(p).read_text()) for p in results],
        out=out,
    )


def tables(*, calibration: dict, datasets: dict[str, dict], outs: dict[str, str]):
    return outputs.write_outputs(
        storages={d: storage_path(d) for d in calibration["datasets"]},
        # every dataset's knobs, in order of first appearance (a dataset's own come last)
        knobs=list(
            dict.fromkeys(k for d in calibration["datasets"] for k in dataset_knobs(calibration, d))
        ),
        methods=list(calibration["methods"]),
        datasets=datasets,
        **outs,
    )
