"""What the calibration rules call (workflow/rules/calibrate.smk; docs/calibration.md): propose
a round, score one trial, tell a round, write the tables and the figure."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from stragglers.calibrate import check
from stragglers.calibrate.outputs import write_outputs
from stragglers.calibrate.search import propose_round, tell_round
from stragglers.calibrate.settings import (
    dataset_knobs,
    realism_settings,
    search_fingerprint,
    start_settings,
    target_dataset,
)
from stragglers.calibrate.trial import PAPER_TARGET, run_trial, target_rates
from stragglers.formats.dataset_spec import plain_replay
from stragglers.io import dump_json

log = logging.getLogger(__name__)

# what a check replays: the calibration and the validation set
CHECK_METHODS = [m for members in check.CHECK_SETS.values() for m in members]


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


def target_inputs(config: dict, dataset: str, methods: list[str]) -> list[str]:
    """The job metrics a dataset's search reads as its target: the real target dataset's
    `protocol: paper` replay of each method (rule fingerprint_replay); none for Table 3."""
    target = target_dataset(config, dataset)
    if target is None:
        return []
    return [f"results/fingerprint/{target}/{method}.csv" for method in methods]


def search_params(config: dict, dataset: str) -> dict[str, Any]:
    """Everything a dataset's search rules need, from the config (a rule parameter, so a change
    reruns them; `rounds` is left out: raising it continues the same search)."""
    section = config["calibration"]
    ds = config["datasets"][dataset]
    # trials always replay under `protocol: paper`: the run's protocol and its overrides are not
    # part of a search (a run under another protocol continues the same search)
    replay = plain_replay(config["replay"])
    knobs = dataset_knobs(section, dataset)
    realism = realism_settings(section, dataset)
    target = target_dataset(config, dataset)
    method_params = {m: dict(config["methods"].get(m) or {}) for m in section["methods"]}
    decides_target = _target_rows(config, target, method_params)
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
        "method_params": method_params,
        "replay": replay,
        "realism": realism,
        "target": target or PAPER_TARGET,
        "fingerprint": search_fingerprint(section, ds, replay, knobs, realism, decides_target),
    }


def _target_rows(config: dict, target: str | None, method_params: dict) -> dict | None:
    """What decides a real target's rows: its dataset, replayed with the search's methods
    (None for Table 3)."""
    if target is None:
        return None
    return {"name": target, "dataset": config["datasets"][target], "method_params": method_params}


def calibration_propose(
    *, previous: list[str], proposals: str, dataset: str, round: str, search: dict
) -> list[dict]:
    """Rule calibration_propose: round `round`'s seeded proposals, asked of the dataset's
    search storage (`previous`: the round before told, ordering only)."""
    return propose_round(
        storage_path=storage_path(dataset),
        fingerprint=search["fingerprint"],
        kind=search["kind"],
        knobs=search["knobs"],
        start=search["start"],
        round_=int(round),
        batch=search["batch"],
        sampler_seed=search["sampler_seed"],
        startup_trials=search["startup_trials"],
        out=proposals,
    )


def calibration_trial(
    *,
    proposals: str,
    paper: str,
    target: list[str],
    result: str,
    dataset: str,
    round: str,
    trial: str,
    search: dict,
) -> dict:
    """Rule calibration_trial: one proposal scored (small traces, the calibration methods under
    `protocol: paper`, the fingerprint distance to the target: `target`'s job metrics, or
    Table 3 when there are none)."""
    proposal = json.loads(Path(proposals).read_text())["trials"][int(trial)]
    scored = run_trial(
        dataset_name=dataset,
        dataset=search["dataset"],
        settings=proposal["settings"],
        seeds=search["seeds"],
        n_jobs=search["n_jobs"],
        methods=search["methods"],
        method_params=search["method_params"],
        replay=search["replay"],
        paper_table=paper,
        realism=search.get("realism"),
        target=target_rates(list(target)) if target else None,
        target_name=search["target"],
    )
    dump_json({**proposal, **scored}, result)
    return scored


def calibration_tell(
    *, proposals: str, results: list[str], told: str, dataset: str, round: str, search: dict
):
    """Rule calibration_tell: a round's results told to the search storage in trial order."""
    return tell_round(
        storage_path=storage_path(dataset),
        fingerprint=search["fingerprint"],
        round_=int(round),
        sampler_seed=search["sampler_seed"],
        startup_trials=search["startup_trials"],
        proposals=json.loads(Path(proposals).read_text()),
        results=[json.loads(Path(p).read_text()) for p in results],
        out=told,
        realism_tolerance=(search.get("realism") or {}).get("tolerance"),
        reach_tolerance=(search.get("realism") or {}).get("reach_tolerance"),
    )


def calibration_tables(
    *,
    told: list[str],
    trials: str,
    rounds_csv: str,
    rounds_md: str,
    best: str,
    methods_csv: str,
    figure: str,
    row_floor_csv: str,
    row_floor_md: str,
    calibration: dict,
    datasets: dict[str, dict],
):
    """Rule calibration_tables: every trial, the distance per round, the best settings, the
    figure of ours against the paper and the closest each row came (results/calibration/;
    `told`: the last rounds told)."""
    return write_outputs(
        storages={d: storage_path(d) for d in calibration["datasets"]},
        # every dataset's knobs, in order of first appearance (a dataset's own come last)
        knobs=list(
            dict.fromkeys(k for d in calibration["datasets"] for k in dataset_knobs(calibration, d))
        ),
        methods=list(calibration["methods"]),
        datasets=dict(datasets),
        out_trials=trials,
        out_rounds_csv=rounds_csv,
        out_rounds_md=rounds_md,
        out_best=best,
        out_methods_csv=methods_csv,
        out_figure=figure,
        out_row_floor_csv=row_floor_csv,
        out_row_floor_md=row_floor_md,
    )


def check_params(config: dict, dataset: str) -> dict[str, Any]:
    """What a check job needs: the search's parameters (its trials' replay and dataset) and the
    validation set's method parameters. A parameter of its own, so a search's trials do not
    rerun when the check changes."""
    search_ = search_params(config, dataset)
    return {
        "dataset": search_["dataset"],
        "knobs": list(search_["knobs"]),
        "start": search_["start"],
        "replay": search_["replay"],
        "n_jobs": int(config["calibration"].get("check_n_jobs", search_["n_jobs"])),
        "check_method_params": {m: dict(config["methods"].get(m) or {}) for m in CHECK_METHODS},
        "target": search_["target"],
    }


def check_outputs(calibration: dict) -> list[str]:
    """Every check job's file: each dataset, starting and best settings, each check seed."""
    return [
        f"results/calibration/check/{dataset}/{label}-seed-{seed}.json"
        for dataset in calibration["datasets"]
        for label in check.SETTINGS_LABELS
        for seed in calibration.get("check_seeds", [])
    ]


def calibration_check(
    *,
    best: str,
    paper: str,
    target: list[str],
    result: str,
    dataset: str,
    label: str,
    seed: str,
    check_params: dict,
) -> dict:
    """Rule calibration_check: the starting or the best settings scored on one fresh seed, on
    the calibration and the validation set (`best`: best_settings.yaml)."""
    settings = (
        check_params["start"]
        if label == "start"
        else check.best_generator_settings(best, dataset, check_params["knobs"])
    )
    scored = check.check_trial(
        params=check_params,
        dataset=dataset,
        settings=settings,
        seed=int(seed),
        n_jobs=check_params["n_jobs"],
        paper_table=paper,
        target=target_rates(list(target)) if target else None,
        target_name=check_params["target"],
    )
    dump_json({"dataset": dataset, "label": label, **scored}, result)
    return scored


def calibration_check_table(*, check_results: list[str], csv: str, summary_csv: str, md: str):
    """Rule calibration_check_table: the check's distances per seed and over the seeds."""
    return check.write_check(
        results=[json.loads(Path(p).read_text()) for p in check_results],
        out_csv=csv,
        out_summary_csv=summary_csv,
        out_md=md,
    )
