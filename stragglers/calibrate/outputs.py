"""The search's outputs under results/calibration/ (docs/calibration.md): every trial, the
distance per round, the best settings per dataset and ours against the target (the paper's
Table 3 or a real dataset's rows, `calibration.targets`) per method at the starting settings
and at the best.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from stragglers.calibrate.search import STUDY_NAME
from stragglers.calibrate.settings import knob_type
from stragglers.evaluate.fingerprint import row_distance
from stragglers.io import save_figure, write_csv_atomic, write_text_atomic
from stragglers.report.tables import write_table


def read_trials(dataset: str, storage_path: str | Path, knobs: list[str]) -> pd.DataFrame:
    """Every trial of a dataset's storage, abandoned ones included (state FAIL, `abandoned`
    says why): round, trial, settings, distance, seconds and each method's TPR/FPR/F1."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=STUDY_NAME, storage=f"sqlite:///{storage_path}")
    rows = []
    for t in study.get_trials(deepcopy=False):
        attrs = dict(t.user_attrs)
        rows.append(
            {
                "dataset": dataset,
                "round": attrs.pop("round", None),
                "trial": attrs.pop("index", None),
                "number": t.number,
                "state": t.state.name,
                "abandoned": attrs.pop("abandoned", ""),
                **{knob: t.params.get(knob) for knob in knobs},
                "distance": t.value,
                "rows_scored": attrs.pop("rows_scored", None),
                "seconds": attrs.pop("seconds", None),
                **{key.replace(" ", "_"): value for key, value in sorted(attrs.items())},
            }
        )
    return pd.DataFrame(rows)


def scored(trials: pd.DataFrame) -> pd.DataFrame:
    return trials[(trials["state"] == "COMPLETE") & trials["distance"].notna()]


def feasible(trials: pd.DataFrame) -> pd.DataFrame:
    """Scored trials that keep the real latency tails: every one in an unconstrained search
    (no `realism_excess`), else those with an excess <= 0 (search.REALISM_EXCESS)."""
    done = scored(trials)
    if "realism_excess" not in done.columns:
        return done
    return done[~(done["realism_excess"] > 0)]


def rounds_table(trials: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and round: trials scored, the round's best and median distance and the best
    so far. In a search held to the real tails, `feasible` counts the trials that keep them,
    and the best distances are over those only."""
    done = scored(trials)
    per_round = (
        done.groupby(["dataset", "round"], sort=True)["distance"]
        .agg(trials="size", median="median")
        .reset_index()
    )
    chosen = feasible(trials).groupby(["dataset", "round"], sort=True)["distance"]
    if "realism_excess" in done.columns:
        counts = chosen.size().rename("feasible").reset_index()
        per_round = per_round.merge(counts, on=["dataset", "round"], how="left")
        per_round["feasible"] = per_round["feasible"].fillna(0).astype(int)
    best = chosen.min().rename("best").reset_index()
    per_round = per_round.merge(best, on=["dataset", "round"], how="left")
    order = ["dataset", "round", "trials"] + (
        ["feasible"] if "feasible" in per_round.columns else []
    )
    per_round = per_round[order + ["best", "median"]]
    # a round without a feasible trial keeps the best so far
    per_round["best_so_far"] = per_round.groupby("dataset")["best"].transform(
        lambda best: best.cummin().ffill()
    )
    per_round["round"] = per_round["round"].astype(int)
    return per_round


def best_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """Each dataset's feasible trial of least distance (ties: the earliest)."""
    done = feasible(trials).sort_values(["dataset", "distance", "number"], kind="stable")
    return done.groupby("dataset", sort=False).head(1)


def start_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """Each dataset's first trial: the dataset's own settings (round 0, trial 0)."""
    done = scored(trials)
    return done[(done["round"] == 0) & (done["trial"] == 0)]


def best_settings_yaml(trials: pd.DataFrame, knobs: list[str], datasets: dict[str, dict]) -> str:
    """The best settings per dataset, shaped to paste as the dataset's `generator:` section
    (its other configured settings kept); `datasets`: each dataset's config."""
    lines = [
        "# The calibration's best generator settings per dataset (docs/calibration.md):",
        "# paste a dataset's `generator:` block over datasets.<name>.generator in the config.",
    ]
    documents = {}
    for row in best_trials(trials).itertuples(index=False):
        row = row._asdict()
        dataset = datasets[row["dataset"]]
        generator = dict(dataset.get("generator") or {})
        for knob in knobs:
            if not pd.isna(row[knob]):  # a knob of another dataset's search only
                generator[knob] = knob_type(dataset["kind"], knob)(row[knob])
        documents[row["dataset"]] = {
            "distance": float(row["distance"]),
            "round": int(row["round"]),
            "trial": int(row["trial"]),
            "generator": generator,
        }
    return "\n".join(lines) + "\n" + yaml.safe_dump(documents, sort_keys=False)


def method_rows(trials: pd.DataFrame, methods: list[str], target: dict[str, dict]) -> pd.DataFrame:
    """Ours at the starting and at the best settings beside the target, per dataset and method
    (`target`: the name and rates each dataset's trials recorded, `_target_rates`)."""
    frames = []
    for label, chosen in (("start", start_trials(trials)), ("best", best_trials(trials))):
        for row in chosen.to_dict("records"):
            for method in methods:
                frames.append(
                    {
                        "dataset": row["dataset"],
                        "settings": label,
                        "distance": row["distance"],
                        "method": method,
                        "TPR": row.get(f"{method}_TPR"),
                        "FPR": row.get(f"{method}_FPR"),
                        "target": target[row["dataset"]]["name"],
                        "target_TPR": target[row["dataset"]][method]["TPR"],
                        "target_FPR": target[row["dataset"]][method]["FPR"],
                    }
                )
    return pd.DataFrame(frames)


def row_distances(trials: pd.DataFrame, methods: list[str]) -> pd.DataFrame:
    """Each trial's distance per calibration row, |TPR - target TPR| + |FPR - target FPR| (NaN
    where the trial scored no job of the method); one column per method, the trials' index."""
    columns = {}
    for method in methods:
        rates = {f"{method}_{m}": m for m in ("TPR", "FPR", "target_TPR", "target_FPR")}
        if not set(rates) <= set(trials.columns):
            columns[method] = pd.Series(np.nan, index=trials.index)
            continue
        columns[method] = row_distance(
            trials[list(rates)].rename(columns=rates).astype(float), reference="target"
        )
    return pd.DataFrame(columns, index=trials.index)


def row_floor_table(trials: pd.DataFrame, methods: list[str]) -> pd.DataFrame:
    """Per dataset and calibration row: the least distance any (feasible) trial reached on that
    row alone, the trial that reached it, and the row's distance at the starting and at the best
    settings. A last row per dataset (`method` "mean") averages each column over the rows.

    The mean of the rows' least distances bounds what the searched settings showed: no trial
    came closer on any one row, so a set distance below it was never within reach of the trials
    seen. Well above the best trial's distance it says the rows were each reached, but by
    different trials (the rows trade against each other); close to it, that the rows are far
    from the target whatever the settings."""
    frames = []
    chosen = feasible(trials)
    start = start_trials(trials).set_index("dataset")
    best = best_trials(trials).set_index("dataset")
    for dataset, group in chosen.groupby("dataset", sort=False):
        distances = row_distances(group, methods)
        at_start = row_distances(start.loc[[dataset]], methods).iloc[0]
        at_best = row_distances(best.loc[[dataset]], methods).iloc[0]
        rows = []
        for method in methods:
            column = distances[method].dropna()
            if column.empty:
                where = {"least": np.nan, "round": pd.NA, "trial": pd.NA}
            else:
                # ties: the earliest trial (the group is in storage order)
                at = column.idxmin()
                where = {
                    "least": float(column.loc[at]),
                    "round": int(group.loc[at, "round"]),
                    "trial": int(group.loc[at, "trial"]),
                }
            rows.append(
                {
                    "dataset": dataset,
                    "method": method,
                    **where,
                    "at_start": float(at_start[method]),
                    "at_best": float(at_best[method]),
                }
            )
        means = pd.DataFrame(rows)[["least", "at_start", "at_best"]].mean()
        frames += rows
        frames.append(
            {"dataset": dataset, "method": "mean", "round": pd.NA, "trial": pd.NA, **means}
        )
    table = pd.DataFrame(
        frames, columns=["dataset", "method", "least", "round", "trial", "at_start", "at_best"]
    )
    for column in ("round", "trial"):
        table[column] = table[column].astype("Int64")
    return table


def plot_methods(rows: pd.DataFrame, out: str | Path) -> None:
    """Per dataset, TPR and FPR of each calibration method: the target, ours at the starting
    settings and ours at the best."""
    from stragglers.io import pyplot

    plt = pyplot()

    datasets = list(dict.fromkeys(rows["dataset"]))
    fig, axes = plt.subplots(
        len(datasets), 2, figsize=(11, 3.2 * len(datasets)), squeeze=False, sharey=True
    )
    styles = {
        "target": {"marker": "s", "color": "black"},
        "start": {"marker": "o", "color": "tab:gray", "label": "ours, starting settings"},
        "best": {"marker": "D", "color": "tab:blue", "label": "ours, best settings"},
    }
    for i, dataset in enumerate(datasets):
        frame = rows[rows["dataset"] == dataset]
        methods = list(dict.fromkeys(frame["method"]))
        x = np.arange(len(methods))
        for j, metric in enumerate(("TPR", "FPR")):
            ax = axes[i, j]
            target = frame.drop_duplicates("method").set_index("method")[f"target_{metric}"]
            name = frame["target"].iloc[0]
            ax.scatter(x, target.reindex(methods), label=f"target ({name})", **styles["target"])
            for offset, label in ((-0.15, "start"), (0.15, "best")):
                ours = frame[frame["settings"] == label].set_index("method")[metric]
                ax.scatter(x + offset, ours.reindex(methods).astype(float), **styles[label])
            ax.set_xticks(x, methods, rotation=45, ha="right")
            ax.set_ylim(-0.05, 1.05)
            distance = frame.groupby("settings")["distance"].first()
            ax.set_title(
                f"{dataset}: {metric} (distance {distance['start']:.3f} at the start, "
                f"{distance['best']:.3f} at the best)",
                fontsize="medium",
            )
            ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(loc="best", fontsize="small")
    fig.tight_layout()
    save_figure(fig, out)
    plt.close(fig)


ROUNDS_CAPTION = (
    "One row per dataset and search round: `trials` scored in the round, the round's `best` "
    "and `median` fingerprint distance of the calibration set under `protocol: paper` (mean "
    "over the calibration methods of |TPR - target TPR| + |FPR - target FPR|, on the trial "
    "seeds' small traces; the target is the paper's Table 3 or a real dataset's own rows "
    "under `protocol: paper`, `calibration.targets`, and trials.csv names it and gives each "
    "trial's distance to Table 3 beside, `paper_distance`), and the `best_so_far` up to that "
    "round. Round 0's first trial is the "
    "dataset's own generator settings. The default seed's data is never searched on: these "
    "distances are the search's objective, not the fit's judgement (docs/calibration.md). In a "
    "search held to the real latency tails (`calibration.realism`), `feasible` counts the "
    "round's trials whose tail-shape distance to the real task_events is within the tolerance "
    "of the starting settings', and `best` is over those only."
)


ROW_FLOOR_CAPTION = (
    "One row per dataset and calibration method: `least`, the least distance to the target's "
    "row (|TPR - target TPR| + |FPR - target FPR|) that any trial reached on that row alone "
    "(in a search held to the real latency tails, any feasible trial), the `round` and "
    "`trial` that reached it, and the row's distance at the starting (`at_start`) and at the "
    "best (`at_best`) settings. The `mean` row averages each column over the methods: its "
    "`least` is a floor under what the trials seen could give, and how far the best trial's "
    "distance sits above it shows how much the rows trade against each other "
    "(docs/calibration.md)."
)


def write_outputs(
    *,
    storages: dict[str, str],
    knobs: list[str],
    methods: list[str],
    datasets: dict[str, dict],
    out_trials: str,
    out_rounds_csv: str,
    out_rounds_md: str,
    out_best: str,
    out_methods_csv: str,
    out_figure: str,
    out_row_floor_csv: str,
    out_row_floor_md: str,
) -> pd.DataFrame:
    trials = pd.concat(
        [read_trials(dataset, path, knobs) for dataset, path in storages.items()],
        ignore_index=True,
    )
    write_csv_atomic(trials, out_trials)
    write_table(
        rounds_table(trials),
        out_rounds_csv,
        out_rounds_md,
        "Calibration: fingerprint distance per round",
        ROUNDS_CAPTION,
        digits=4,
    )
    write_text_atomic(best_settings_yaml(trials, knobs, datasets), out_best)
    rows = method_rows(trials, methods, _target_rates(trials, methods))
    write_csv_atomic(rows, out_methods_csv)
    plot_methods(rows, out_figure)
    write_table(
        row_floor_table(trials, methods),
        out_row_floor_csv,
        out_row_floor_md,
        "Calibration: the closest each row came",
        ROW_FLOOR_CAPTION,
        digits=4,
    )
    return trials


def _target_rates(trials: pd.DataFrame, methods: list[str]) -> dict[str, dict]:
    """The target's name and TPR/FPR per dataset and method, as the trials recorded them."""
    out: dict[str, dict] = {}
    for row in scored(trials).groupby("dataset").head(1).to_dict("records"):
        out[row["dataset"]] = {
            "name": row.get("target"),
            **{
                m: {"TPR": row.get(f"{m}_target_TPR"), "FPR": row.get(f"{m}_target_FPR")}
                for m in methods
            },
        }
    return out
