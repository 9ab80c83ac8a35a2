"""The search: Optuna's TPE sampler asked in seeded rounds, told in a fixed order, every trial
kept in an SQLite storage. Round r's proposals depend only on the trials told before r and
on a sampler seeded by (sampler_seed, r), so not on parallelism, finishing order or restarts;
the storage is the record a restarted search resumes from (docs/calibration.md, "How it
runs: rounds in the DAG").
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from stragglers.calibrate.settings import knob_type
from stragglers.io import dump_json

log = logging.getLogger(__name__)

STUDY_NAME = "calibration"
# a trial's user attribute and constraint ("realism") in a search held to the real tails: its
# tail-shape distance minus the allowed one (<= 0: feasible; settings.realism_settings)
REALISM_EXCESS = "realism_excess"
# per method, what the storage records of each trial beside its distance (`target_`: the rates
# the distance is measured to, the paper's or a real dataset's; trial.fingerprint_rows)
RECORDED = ("TPR", "FPR", "F1", "paper_TPR", "paper_FPR", "target_TPR", "target_FPR")


def round_seed(sampler_seed: int, round_: int) -> int:
    """The sampler seed of round `round_`: a SeedSequence of (sampler_seed, round)."""
    return int(np.random.SeedSequence([int(sampler_seed), int(round_)]).generate_state(1)[0])


def distributions(kind: str, knobs: dict[str, dict]) -> dict[str, Any]:
    """Each knob's Optuna distribution: integer or float, log scale where asked."""
    import optuna

    out = {}
    for knob, bounds in knobs.items():
        log_scale = bool(bounds.get("log", False))
        if knob_type(kind, knob) is int:
            out[knob] = optuna.distributions.IntDistribution(
                int(bounds["low"]), int(bounds["high"]), log=log_scale
            )
        else:
            out[knob] = optuna.distributions.FloatDistribution(
                float(bounds["low"]), float(bounds["high"]), log=log_scale
            )
    return out


def open_study(
    storage_path: str | Path,
    fingerprint: str,
    sampler_seed: int,
    round_: int,
    *,
    startup_trials: int,
):
    """The dataset's study in its SQLite file (created on first use), with round `round_`'s
    sampler. A storage made by another search config is refused, naming the file. The TPE
    sampler treats a trial with a positive constraint (`Trial.set_constraint`, as
    `tell_round` records the realism excess) as infeasible."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage_path = Path(storage_path)
    storage_path.parent.mkdir(parents=True, exist_ok=True)
    sampler = optuna.samplers.TPESampler(
        seed=round_seed(sampler_seed, round_),
        n_startup_trials=startup_trials,
        multivariate=True,
        constant_liar=True,
    )
    storage = optuna.storages.RDBStorage(f"sqlite:///{storage_path}")
    study = optuna.create_study(
        study_name=STUDY_NAME,
        storage=storage,
        sampler=sampler,
        direction="minimize",
        load_if_exists=True,
    )
    recorded = study.user_attrs.get("fingerprint")
    if recorded is None:
        study.set_user_attr("fingerprint", fingerprint)
    elif recorded != fingerprint:
        raise ValueError(
            f"{storage_path}: holds trials of another calibration config (fingerprint "
            f"{recorded}, this config {fingerprint}); move the file away to start a new search"
        )
    return study, storage


def _set_attr(storage, number: int, key: str, value: Any) -> None:
    """A user attribute of a trial that is not the one being asked (Optuna's storage API)."""
    study_id = storage.get_study_id_from_name(STUDY_NAME)
    trial_id = storage.get_trial_id_from_study_id_trial_number(study_id, number)
    storage.set_trial_user_attr(trial_id, key, value)


def _abandon(study, storage, number: int, why: str) -> None:
    import optuna

    _set_attr(storage, number, "abandoned", why)
    study.tell(number, state=optuna.trial.TrialState.FAIL)


def propose_round(
    *,
    storage_path: str | Path,
    fingerprint: str,
    kind: str,
    knobs: dict[str, dict],
    start: dict[str, Any],
    round_: int,
    batch: int,
    sampler_seed: int,
    startup_trials: int,
    out: str | Path,
) -> list[dict[str, Any]]:
    """Round `round_`'s `batch` settings (round 0's first is the dataset's own settings),
    written to `out`; asked once, then read back from the storage."""
    import optuna

    study, storage = open_study(
        storage_path, fingerprint, sampler_seed, round_, startup_trials=startup_trials
    )
    states = optuna.trial.TrialState
    trials = study.get_trials(deepcopy=False)
    told_before = [t for t in trials if t.user_attrs.get("round", round_) < round_]
    if any(t.state == states.RUNNING for t in told_before):
        raise RuntimeError(f"{storage_path}: rounds before {round_} have trials not yet told")
    mine = [
        t for t in trials if t.user_attrs.get("round") == round_ and "abandoned" not in t.user_attrs
    ]
    asked_in_full = len(mine) == batch and all(set(t.params) == set(knobs) for t in mine)
    if not asked_in_full:
        # a round cut short while being asked, or a trial asked and never tagged
        partial = {t.number for t in mine}
        for t in trials:
            untagged = "round" not in t.user_attrs and t.state == states.RUNNING
            if untagged or t.number in partial:
                _abandon(
                    study, storage, t.number, f"round {round_} was cut short while being asked"
                )
        waiting = [t for t in trials if t.state == states.WAITING]
        if round_ == 0 and not waiting:
            study.enqueue_trial(start)
        space = distributions(kind, knobs)
        for index in range(batch):
            trial = study.ask(space)
            trial.set_user_attr("round", round_)
            trial.set_user_attr("index", index)
        mine = [
            t
            for t in study.get_trials(deepcopy=False)
            if t.user_attrs.get("round") == round_ and "abandoned" not in t.user_attrs
        ]
    mine.sort(key=lambda t: t.user_attrs["index"])
    proposals = [
        {"round": round_, "trial": t.user_attrs["index"], "number": t.number, "settings": t.params}
        for t in mine
    ]
    dump_json({"round": round_, "trials": proposals}, out)
    log.info("round %d: %d proposals (%s)", round_, len(proposals), storage_path)
    return proposals


def tell_round(
    *,
    storage_path: str | Path,
    fingerprint: str,
    round_: int,
    sampler_seed: int,
    startup_trials: int,
    proposals: dict[str, Any],
    results: list[dict[str, Any]],
    out: str | Path,
    realism_tolerance: float | None = None,
    reach_tolerance: float | None = None,
) -> dict[str, Any]:
    """Tell the round's results in trial order (trials told already are skipped) and record
    each trial's per-method rates in the storage; `out` summarises the round.

    With `realism_tolerance` (a constrained search), a trial is feasible when its
    `shape_distance` exceeds the starting settings' (round 0, trial 0, told first) by at most
    the tolerance; the excess is recorded for the sampler. With `reach_tolerance` too, it must
    also have a `reach_gap` within that tolerance: the excess is the larger of the two."""
    import optuna

    constrained = realism_tolerance is not None
    study, storage = open_study(
        storage_path, fingerprint, sampler_seed, round_, startup_trials=startup_trials
    )
    states = optuna.trial.TrialState
    by_number = {t.number: t for t in study.get_trials(deepcopy=False)}
    start_shape = None
    if constrained:
        start_shape = _start_shape(study, proposals, results, round_)
    for proposal, result in zip(proposals["trials"], results, strict=True):
        trial = by_number[proposal["number"]]
        if result["settings"] != proposal["settings"]:
            raise ValueError(
                f"round {round_} trial {proposal['trial']}: result for settings "
                f"{result['settings']}, proposed {proposal['settings']}"
            )
        if trial.state != states.RUNNING:
            continue  # told before a restart
        attrs = {
            "seconds": result["seconds"],
            "rows_scored": result["rows_scored"],
            "target": result["target"],
            "paper_distance": result["paper_distance"],
        }
        if constrained:
            where = f"round {round_} trial {proposal['trial']}"
            shape = _held_to(
                result, "shape_distance", where, "the real tails (calibration.realism)"
            )
            attrs["shape_distance"] = shape
            attrs[REALISM_EXCESS] = shape - start_shape - realism_tolerance
            if reach_tolerance is not None:
                gap = _held_to(result, "reach_gap", where, "the real reach (reach_tolerance)")
                attrs["reach_gap"] = gap
                attrs[REALISM_EXCESS] = max(attrs[REALISM_EXCESS], gap - reach_tolerance)
        for method, rates in result["methods"].items():
            attrs.update({f"{method} {metric}": rates[metric] for metric in RECORDED})
        for key, value in attrs.items():
            _set_attr(storage, trial.number, key, value)
        if constrained:  # what the TPE sampler reads: > 0 is infeasible
            optuna.trial.Trial(study, trial._trial_id).set_constraint(
                "realism", attrs[REALISM_EXCESS]
            )
        if result["distance"] is None:
            study.tell(trial.number, state=states.FAIL)
        else:
            study.tell(trial.number, result["distance"])
    distances = [r["distance"] for r in results]
    complete = [
        t.value
        for t in study.get_trials(deepcopy=False, states=(states.COMPLETE,))
        if t.user_attrs.get(REALISM_EXCESS, 0.0) <= 0.0
    ]
    summary = {
        "round": round_,
        "distances": distances,
        "best_so_far": min(complete) if complete else None,
    }
    dump_json(summary, out)
    return summary


def _held_to(result: dict[str, Any], key: str, where: str, held_to: str) -> float:
    """A constrained trial's distance to the real rows; its absence names the trial."""
    value = result.get(key)
    if value is None:
        raise ValueError(f"{where}: no {key} in its result, but the search is held to {held_to}")
    return value


def _start_shape(study, proposals: dict[str, Any], results: list[dict[str, Any]], round_: int):
    """The starting settings' tail-shape distance: round 0's first result, or its record."""
    if round_ == 0:
        first = next((r for p, r in zip(proposals["trials"], results) if p["trial"] == 0), None)
        if first is not None and first.get("shape_distance") is not None:
            return float(first["shape_distance"])
    for t in study.get_trials(deepcopy=False):
        if t.user_attrs.get("round") == 0 and t.user_attrs.get("index") == 0:
            if "shape_distance" in t.user_attrs:
                return float(t.user_attrs["shape_distance"])
    raise ValueError(
        "the search is held to the real tails, but the starting trial (round 0, trial 0) has "
        "no shape_distance: was the storage begun without calibration.realism?"
    )
