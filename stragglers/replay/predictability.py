"""How much a converted trace's features say about its latencies, and how heavy its tails are:
per job, the out-of-fold Spearman correlation and straggler AUC of a boosted regressor on the
final features, and max latency / p90; per dataset their means (median for the tail). One
measure for the reproduction audit, the sensitivity map and the command line,
`python -m stragglers.replay.predictability <converted dir> [--out-json F] [--out-csv F]` (the
dataset kind is the one the conversion recorded; --kind overrides it). It lives in the replay
stage because it reads jobs through the replay's view and fits the methods' regressor
(docs/sensitivity.md, "Predictability of a trace").
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stragglers.formats.dataset_spec import DEFAULT_SEED
from stragglers.formats.datasets import converted_kind
from stragglers.io import dump_json, write_atomic

N_FOLDS = 5
# defaults of the command line when --checkpoint-interval is not given: the interval the
# default configs use for each kind (config/config.yaml, config/google-2011-shared.yaml)
DEFAULT_CHECKPOINT_INTERVAL = {
    "google-2011": 300.0,
    "google-2011-events": 60.0,
    "alibaba-2018": 60.0,
}


def cross_validated_predictability(
    features: np.ndarray, latency: np.ndarray, stragglers: np.ndarray, seed: int
) -> tuple[float, float]:
    """Out-of-fold predictions of the boosted regressor (5 seeded folds) -> (Spearman
    correlation with latency, straggler ROC AUC; NaN AUC without both classes)."""
    from scipy.stats import spearmanr
    from sklearn.metrics import roc_auc_score

    from stragglers.methods.nurd import BoostedLatencyModel

    rng = np.random.default_rng(seed)
    folds = rng.permutation(len(latency)) % N_FOLDS
    predicted = np.empty(len(latency))
    for fold in range(N_FOLDS):
        test = folds == fold
        model = BoostedLatencyModel(100, 3, 0.1, 64, seed).fit(features[~test], latency[~test])
        predicted[test] = model.predict(features[test])
    rho = float(spearmanr(predicted, latency).statistic)
    auc = (
        float(roc_auc_score(stragglers, predicted))
        if 0 < stragglers.sum() < len(latency)
        else np.nan
    )
    return rho, auc


@dataclass(frozen=True)
class FinalJobView:
    """A job as the paper's protocol sees it at its end: what both the audit's diagnosis and
    the predictability measure start from."""

    view: Any  # stragglers.replay.aligned.AlignedView
    latency: np.ndarray
    threshold: float
    stragglers: np.ndarray
    scale: Any  # stragglers.replay.aligned.FinalScale

    def scaled_final_features(self) -> np.ndarray:
        from stragglers.formats.features import fill_missing

        return fill_missing(self.scale.features(self.view.final()))[0]


def final_job_view(job, last_columns: np.ndarray, settings) -> FinalJobView:
    from stragglers.replay import aligned
    from stragglers.replay.core import straggler_threshold

    rules = settings.rules
    view = aligned.build_view(job, last_columns, rules.features, settings.aligned_step)
    latency = view.latency
    tau = straggler_threshold(latency, settings.straggler_quantile, rules.threshold)
    return FinalJobView(
        view, latency, tau, latency >= tau, aligned.final_scale(view.final(), latency)
    )


def job_predictability(job, last_columns: np.ndarray, settings, seed: int) -> dict[str, Any]:
    """One job's spearman, auc and tail (module docstring)."""
    final = final_job_view(job, last_columns, settings)
    rho, auc = cross_validated_predictability(
        final.scaled_final_features(), final.latency, final.stragglers, seed
    )
    return {
        "job_id": str(job.job_id),
        "n_tasks": int(job.n_tasks),
        "spearman": rho,
        "auc": auc,
        "tail": float(final.latency.max() / final.threshold),
    }


def summarise(per_job: pd.DataFrame) -> dict[str, float]:
    """Dataset-level numbers: mean spearman and auc over jobs (auc over the jobs that have
    both classes, counted in auc_jobs), median tail over jobs."""
    if per_job.empty:
        raise ValueError("predictability: no job to measure")
    auc = per_job["auc"].dropna()
    return {
        "n_jobs": int(len(per_job)),
        "spearman": float(per_job["spearman"].mean()),
        "auc": float(auc.mean()) if len(auc) else float("nan"),
        "tail": float(per_job["tail"].median()),
        "auc_jobs": int(len(auc)),
    }


def dataset_predictability(
    converted_dir: Path | str,
    kind: str,
    replay: dict[str, Any],
    seed: int,
    n_jobs: int = 0,
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Per-job measures of a converted dataset (the first `n_jobs` jobs by id; 0 = all) and
    its summary. `replay` holds the dataset's replay settings; the view is the paper's."""
    from stragglers.formats.datasets import last_columns
    from stragglers.formats.jobs import iter_shard_jobs, read_manifest
    from stragglers.replay.core import ReplaySettings

    replay = {k: v for k, v in replay.items() if k not in ("protocol", "overrides", "kill_delay")}
    settings = ReplaySettings(**{**replay, "protocol": "paper"})
    ids = sorted(read_manifest(converted_dir)["job_id"].astype(str))
    chosen = ids[:n_jobs] if n_jobs > 0 else ids
    rows = [
        job_predictability(job, last_columns(kind, converted_dir), settings, seed)
        for job in iter_shard_jobs(converted_dir, kind, None, only_jobs=chosen)
    ]
    per_job = pd.DataFrame(rows).sort_values("job_id", kind="stable").reset_index(drop=True)
    return per_job, summarise(per_job)


def write_predictability(
    per_job: pd.DataFrame,
    summary: dict[str, Any],
    out_json: Path | str | None,
    out_csv: Path | str | None,
) -> None:
    """The summary as JSON, the per-job rows as CSV (either may be None)."""
    if out_json:
        dump_json(summary, out_json)
    if out_csv:
        write_atomic(out_csv, lambda tmp: per_job.to_csv(tmp, index=False, float_format="%.6g"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stragglers.replay.predictability",
        description="A converted dataset's predictability (out-of-fold Spearman and straggler "
        "AUC of the boosted regressor on final features) and tail (median max/p90 latency).",
    )
    parser.add_argument("converted_dir", help="resources/converted/<dataset> (manifest.parquet)")
    parser.add_argument(
        "--kind",
        choices=sorted(DEFAULT_CHECKPOINT_INTERVAL),
        help="the dataset kind (default: the one its conversion recorded in the manifest)",
    )
    parser.add_argument("--checkpoint-interval", type=float, help="s (default: by kind)")
    parser.add_argument("--straggler-quantile", type=float, default=0.90)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the default config's seed")
    parser.add_argument("--n-jobs", type=int, default=0, help="first N jobs by id (0 = all)")
    parser.add_argument("--out-json", help="write the summary here")
    parser.add_argument("--out-csv", help="write the per-job rows here")
    args = parser.parse_args(argv)
    if not (Path(args.converted_dir) / "manifest.parquet").exists():
        parser.error(f"{args.converted_dir}: no manifest.parquet (not a converted dataset)")
    if args.kind is None:
        try:
            args.kind = converted_kind(args.converted_dir)
        except ValueError as error:
            parser.error(str(error))
    if args.kind not in DEFAULT_CHECKPOINT_INTERVAL:
        parser.error(f"{args.converted_dir}: kind {args.kind!r} has no predictability measure")
    interval = args.checkpoint_interval or DEFAULT_CHECKPOINT_INTERVAL[args.kind]
    replay = {"checkpoint_interval": interval, "straggler_quantile": args.straggler_quantile}
    per_job, summary = dataset_predictability(
        args.converted_dir, args.kind, replay, args.seed, args.n_jobs
    )
    write_predictability(per_job, summary, args.out_json, args.out_csv)
    print(json.dumps({"dataset": str(args.converted_dir), **summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
