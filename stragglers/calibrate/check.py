"""The fit checked where the search never looked (docs/calibration.md, "Checking the fit"):
the starting and the best settings, each on fresh generator seeds, scored on the calibration
and the validation set. The held-out methods (NURD, NURD-NC) are not replayed here: the
default run tests them on the default seed (`paper_fingerprint`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from stragglers.calibrate.trial import PAPER_TARGET, run_trial
from stragglers.evaluate.fingerprint import CALIBRATION_SET, VALIDATION_SET, set_distance
from stragglers.io import write_csv_atomic
from stragglers.report.tables import write_table

CHECK_SETS = {"calibration": CALIBRATION_SET, "validation": VALIDATION_SET}
SETTINGS_LABELS = ("start", "best")

CHECK_CAPTION = (
    "The calibration checked on seeds the search never used: per dataset, the starting "
    "settings (`start`, the dataset's own) and the search's best (`best`), each scored under "
    "`protocol: paper` on every check seed. `distance`: the mean over the set's methods of "
    "|TPR - target TPR| + |FPR - target FPR| (`target`: the search's, the paper's Table 3 or "
    "a real dataset's rows under `protocol: paper`), per seed; `mean`, `sd`, `min`, `max`: over the "
    "seeds; `rows`: the set's methods with a score (the least over the seeds). The validation "
    "set was never scored during the search."
)


def best_generator_settings(best_file: str | Path, dataset: str, knobs: list[str]) -> dict:
    """The searched knobs of a dataset's best trial, from best_settings.yaml."""
    documents = yaml.safe_load(Path(best_file).read_text())
    if dataset not in (documents or {}):
        raise ValueError(f"{best_file}: no best trial for {dataset} (no trial scored)")
    generator = documents[dataset]["generator"]
    return {knob: generator[knob] for knob in knobs if knob in generator}


def check_trial(
    *,
    params: dict,
    dataset: str,
    settings: dict[str, Any],
    seed: int,
    n_jobs: int,
    paper_table: str,
    target: pd.DataFrame | None = None,
    target_name: str = PAPER_TARGET,
) -> dict[str, Any]:
    """One (settings, seed): every calibration- and validation-set method scored; the
    distance of each set to the target (trial.run_trial's `target`)."""
    methods = [m for members in CHECK_SETS.values() for m in members]
    result = run_trial(
        dataset_name=dataset,
        dataset=params["dataset"],
        settings=settings,
        seeds=[seed],
        n_jobs=n_jobs,
        methods=methods,
        method_params=params["check_method_params"],
        replay=params["replay"],
        paper_table=paper_table,
        target=target,
        target_name=target_name,
    )
    rows = pd.DataFrame.from_dict(result["methods"], orient="index")
    sets = {}
    for name, members in CHECK_SETS.items():
        distance, scored = set_distance(rows.loc[rows.index.isin(members)], reference="target")
        sets[name] = {"distance": None if pd.isna(distance) else distance, "rows": scored}
    return {**result, "seed": seed, "sets": sets}


def check_rows(results: list[dict]) -> pd.DataFrame:
    """One row per dataset, settings, seed and set (the rule's JSON files, as read)."""
    rows = [
        {
            "dataset": r["dataset"],
            "settings": r["label"],
            "seed": r["seed"],
            "set": name,
            "target": r.get("target", PAPER_TARGET),
            "distance": values["distance"],
            "rows": values["rows"],
        }
        for r in results
        for name, values in r["sets"].items()
    ]
    return pd.DataFrame(rows)


def check_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, settings and set: the distance's mean, sd, min and max over the seeds."""
    grouped = rows.groupby(["dataset", "settings", "set", "target"], sort=False)
    summary = grouped["distance"].agg(["mean", "std", "min", "max"]).reset_index()
    summary = summary.rename(columns={"std": "sd"})
    summary["seeds"] = grouped["seed"].nunique().to_numpy()
    summary["rows"] = grouped["rows"].min().to_numpy()
    return summary


def write_check(*, results: list[dict], out_csv: str, out_summary_csv: str, out_md: str):
    rows = check_rows(results)
    write_csv_atomic(rows, out_csv)
    summary = check_summary(rows)
    write_table(
        summary,
        out_summary_csv,
        out_md,
        "Calibration checked on fresh seeds",
        CHECK_CAPTION,
        digits=4,
    )
    return summary
