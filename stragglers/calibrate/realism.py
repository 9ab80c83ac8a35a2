"""The calibration's trials held to the real trace (docs/calibration.md, "Realism"): each
Google trial's settings regenerate a trace whose latency-tail shape (traces.calibrate) is
compared with the real task_events; only trials no further from the real rows than the
starting settings may be chosen. The fingerprint never sees the real rows, and the real rows
never see a method.

    python -m stragglers.calibrate.realism --trials results/calibration/trials.csv \\
        --real ../shared/data/google-2011/task_events/part-00000-of-00500.csv.gz \\
        --out results/calibration/realism.csv

The command also gives each trial's trace the paper protocol's flag-all rates
(`stragglers.replay.reach`: which scored tasks ever reach a checkpoint), beside the real
rows', and how each method's TPR and FPR across the trials follow them (Spearman), which
says how much of a row the durations alone decide (docs/calibration.md, "What the detector
rows measure").
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from stragglers.calibrate.settings import generator_class, knob_type
from stragglers.replay import reach
from stragglers.traces.calibrate import (
    job_latency_shape,
    read_task_events,
    shape_summary,
    summarize_events,
    task_latencies,
)
from stragglers.traces.generate import generate_google

# the shape of a job's latency distribution; task durations (median_s) are scaled on purpose
# and the interruption rates are not searched
SHAPE_STATISTICS = tuple(
    [f"p90_over_median q{q:02d}" for q in (10, 25, 50, 75, 90)]
    + [f"max_over_p90 q{q:02d}" for q in (10, 25, 50, 75, 90)]
    + ["fraction of jobs with p90 > max/2"]
)
GOOGLE_KIND = "google-2011"


def shape_distance(generated: dict[str, float], real: dict[str, float]) -> float:
    """Mean |generated - real| over the latency-shape statistics."""
    return float(np.mean([abs(generated[key] - real[key]) for key in SHAPE_STATISTICS]))


@contextlib.contextmanager
def generated_traces(
    settings: dict, base: dict, seeds: Sequence[int], n_jobs: int
) -> Iterator[dict[int, Path]]:
    """The Google traces `settings` (over `base`) generate, one folder per seed, removed on
    exit."""
    cls = generator_class(GOOGLE_KIND)
    with tempfile.TemporaryDirectory(prefix="realism-") as tmp:
        folders = {}
        for seed in seeds:
            config = cls.from_dict({**base, **settings, "n_jobs": n_jobs, "seed": int(seed)})
            folders[int(seed)] = Path(tmp) / str(seed)
            generate_google(folders[int(seed)], config)
        yield folders


def traces_events(folders: dict[int, Path]) -> dict[int, pd.DataFrame]:
    """Each generated trace's task events, read once for both the shape and the reach."""
    return {seed: read_task_events(folder) for seed, folder in folders.items()}


def traces_shape(events: dict[int, pd.DataFrame]) -> dict:
    """The latency-shape summary of generated traces, their jobs pooled."""
    frames = []
    for seed, trace in events.items():
        latencies = task_latencies(trace)
        frames.append(latencies.assign(job_id=f"{seed}:" + latencies["job_id"].astype(str)))
    return shape_summary(job_latency_shape(pd.concat(frames, ignore_index=True)))


def traces_reach(events: dict[int, pd.DataFrame]) -> dict[str, float]:
    """The flag-all rates and window counts of generated traces, their jobs pooled."""
    tables = [reach.reach_table(trace) for trace in events.values()]
    return reach.reach_summary(pd.concat(tables, ignore_index=True))


def trial_shape(settings: dict, base: dict, seeds: Sequence[int], n_jobs: int) -> dict:
    """The latency-shape summary of the traces `settings` generate (seeds pooled)."""
    with generated_traces(settings, base, seeds, n_jobs) as folders:
        return traces_shape(traces_events(folders))


# what a search held to the real reach compares (calibration.realism.<dataset>.reach_tolerance):
# which jobs are scored at all, and the flag-all FPR that the detectors' FPRs follow
REACH_GAP_STATISTICS = ("jobs with a scored checkpoint", "flag-all FPR (mean over those jobs)")


def reach_gap(generated: dict[str, float], real: dict[str, float]) -> float:
    """The largest |generated - real| over REACH_GAP_STATISTICS (NaN counts as 1: no job of
    the trial has a result)."""
    gaps = [abs(generated[key] - real[key]) for key in REACH_GAP_STATISTICS]
    return float(max(1.0 if np.isnan(gap) else gap for gap in gaps))


def trial_realism(settings: dict, base: dict, seeds: Sequence[int], realism: dict) -> dict:
    """A trial's distances to the real rows (settings.realism_settings): `shape_distance`, and
    `reach_gap` when the search is held to the real reach too; one generation serves both."""
    with generated_traces(settings, base, seeds, realism["n_jobs"]) as folders:
        events = traces_events(folders)
    real_events = read_task_events(realism["task_events"])
    out = {"shape_distance": shape_distance(traces_shape(events), summarize_events(real_events))}
    if realism.get("reach_tolerance") is not None:
        real_reach = reach.reach_summary(reach.reach_table(real_events))
        out["reach_gap"] = reach_gap(traces_reach(events), real_reach)
    return out


# the reach statistics a trial's row carries (docs/calibration.md, "What the detector rows
# measure"), with the column names they take there
REACH_STATISTICS = {
    "jobs with a scored checkpoint": "reach_jobs_with_result",
    "flag-all TPR (mean over those jobs)": "flag_all_TPR",
    "flag-all FPR (mean over those jobs)": "flag_all_FPR",
    "median windows per task (median over the jobs with a result)": "median_windows_scored",
}


def follows_reach(table: pd.DataFrame) -> pd.DataFrame:
    """Per method with TPR and FPR columns in `table`: the Spearman correlation over the trials
    of its TPR with the flag-all TPR and of its FPR with the flag-all FPR."""
    methods = sorted(
        c[: -len("_FPR")]
        for c in table.columns
        if c.endswith("_FPR")
        and not c.endswith(("paper_FPR", "target_FPR"))
        and c != "flag_all_FPR"
    )
    rows = []
    for method in methods:
        row = {"method": method}
        for metric in ("TPR", "FPR"):
            pair = table[[f"{method}_{metric}", f"flag_all_{metric}"]].dropna()
            row[f"spearman_{metric}"] = (
                float(pair.corr(method="spearman").iloc[0, 1]) if len(pair) > 2 else np.nan
            )
        rows.append(row)
    return pd.DataFrame(rows, columns=["method", "spearman_TPR", "spearman_FPR"])


def realism_table(
    trials: pd.DataFrame,
    knobs: list[str],
    real: dict[str, float],
    base: dict,
    seeds: Sequence[int],
    n_jobs: int,
    dataset: str = "google-synthetic",
) -> pd.DataFrame:
    """One row per scored trial of `dataset`: its fingerprint distance, its shape distance to
    the real rows, and whether it is eligible (no further than the starting settings')."""
    done = trials[(trials["dataset"] == dataset) & (trials["state"] == "COMPLETE")]
    rows = []
    for trial in done.to_dict("records"):
        settings = {
            k: knob_type(GOOGLE_KIND, k)(trial[k]) for k in knobs if not pd.isna(trial.get(k))
        }
        with generated_traces(settings, base, seeds, n_jobs) as folders:
            events = traces_events(folders)
        shape, flag_all = traces_shape(events), traces_reach(events)
        rows.append(
            {
                "dataset": dataset,
                "round": int(trial["round"]),
                "trial": int(trial["trial"]),
                "distance": trial["distance"],
                "shape_distance": shape_distance(shape, real),
                **{key: shape[key] for key in SHAPE_STATISTICS},
                **{column: flag_all[key] for key, column in REACH_STATISTICS.items()},
                **settings,
                # the methods' rates in the search, to set beside the flag-all rates
                **{c: trial[c] for c in trial if c.endswith(("_TPR", "_FPR"))},
            }
        )
    table = pd.DataFrame(rows)
    start = table[(table["round"] == 0) & (table["trial"] == 0)]
    if start.empty:
        raise ValueError(f"{dataset}: no starting trial (round 0, trial 0) in the trials")
    table["eligible"] = table["shape_distance"] <= float(start["shape_distance"].iloc[0])
    return table.sort_values(["distance", "round", "trial"], kind="stable")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", required=True, help="results/calibration/trials.csv")
    parser.add_argument("--real", required=True, help="real task_events part file or folder")
    parser.add_argument("--out", required=True, help="CSV: one row per Google trial")
    parser.add_argument("--dataset", default="google-synthetic")
    parser.add_argument("--config", default="config/config.yaml", help="the search's config")
    parser.add_argument("--seeds", default="101,102", help="trace seeds (never the judged one)")
    parser.add_argument("--n-jobs", type=int, default=30)
    args = parser.parse_args(argv)
    config = yaml.safe_load(Path(args.config).read_text())
    knobs = list(config["calibration"]["knobs"]) + list(
        (config["calibration"].get("dataset_knobs") or {}).get(args.dataset, {})
    )
    trials = pd.read_csv(args.trials)
    real_events = read_task_events(args.real)  # read once for the shape and the reach
    real = summarize_events(real_events)
    real_reach = reach.reach_summary(reach.reach_table(real_events))
    table = realism_table(
        trials,
        knobs,
        real,
        base={},
        seeds=[int(s) for s in args.seeds.split(",")],
        n_jobs=args.n_jobs,
        dataset=args.dataset,
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    eligible = table[table["eligible"]]
    print(f"{len(eligible)} of {len(table)} trials no further from the real rows than the start")
    if len(eligible):
        best = eligible.iloc[0]
        print(
            f"best eligible: round {best['round']}, trial {best['trial']}, distance "
            f"{best['distance']:.4f}, shape distance {best['shape_distance']:.4f}"
        )
        print(yaml.safe_dump({k: best[k].item() for k in knobs}, sort_keys=False))
    print("flag-all rates (python -m stragglers.replay.reach): the real rows, and the trials'")
    reach_columns = list(REACH_STATISTICS.values())
    spread = table[reach_columns].describe().loc[["min", "50%", "max"]]
    spread.loc["real"] = [real_reach[key] for key in REACH_STATISTICS]
    print(spread.round(3).to_string())
    print("how each method's rates across the trials follow the flag-all rates (Spearman):")
    print(follows_reach(table).round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
