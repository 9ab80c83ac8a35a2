"""One calibration trial: small traces generated with the trial's settings, converted, the
calibration methods replayed under `protocol: paper` and scored as Table 3 scores them, and
the fingerprint distance to the paper's rows (docs/calibration.md).

Each stage is the pipeline's own function (traces.generate, convert.one_process,
replay.runner, evaluate.metrics, evaluate.fingerprint), run in one process on a temporary
folder: a trial is one Snakemake job, so a round's trials spread over the cores or a cluster.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from stragglers.calibrate.settings import generator_class
from stragglers.convert.one_process import convert_alibaba, convert_google
from stragglers.evaluate.fingerprint import set_distance
from stragglers.evaluate.metrics import job_metrics, summary_table
from stragglers.formats.datasets import PAPER_TRACE_OF_KIND, last_columns
from stragglers.formats.jobs import iter_shard_jobs
from stragglers.replay.core import ReplaySettings, dataset_replay
from stragglers.replay.runner import run_method_on_jobs
from stragglers.report.tables import read_paper_table3, table3_long
from stragglers.traces.generate import generate_alibaba, generate_google

log = logging.getLogger(__name__)

# the paper's dataset label of each generated kind (Table 3's column groups)


def paper_replay(dataset: dict, replay: dict) -> ReplaySettings:
    """The dataset's replay grid under `protocol: paper` with the authors' rules unflipped."""
    merged = dataset_replay(replay, dataset)
    plain = {k: v for k, v in merged.items() if k not in ("protocol", "overrides")}
    return ReplaySettings(**plain, protocol="paper")


def trial_data(dataset: dict, settings: dict[str, Any], n_jobs: int, seed: int, folder: Path):
    """Generate and convert one seed's trace; the converted folder."""
    kind = dataset["kind"]
    generator = {**(dataset.get("generator") or {}), **settings, "n_jobs": n_jobs, "seed": seed}
    config = generator_class(kind).from_dict(generator)
    raw, converted = folder / "raw", folder / "converted"
    common = {"dataset": "trial", "n_shards": 1, "min_tasks": dataset.get("min_tasks", 100)}
    if kind == "google-2011":
        generate_google(raw, config)
        priorities = tuple(dataset.get("production_priorities", (9, 10, 11)))
        convert_google(raw, converted, **common, priorities=priorities)
    else:
        generate_alibaba(raw, config)
        convert_alibaba(raw, converted, **common, kind=kind)
    return converted


def score_methods(
    converted: Path,
    dataset: dict,
    name: str,
    methods: list[str],
    method_params: dict[str, dict],
    replay: ReplaySettings,
    seed: int,
) -> pd.DataFrame:
    """Per-job metrics of each method on one converted trace (evaluate.job_metrics's rows)."""
    from stragglers.methods import get_method  # the replay's methods, as the predict rule

    kind = dataset["kind"]
    jobs = list(iter_shard_jobs(converted, kind, None))
    frames = []
    for method in methods:
        tasks, job_rows = run_method_on_jobs(
            iter(jobs),
            get_method(method),
            dict(method_params.get(method) or {}),
            replay,
            last_columns(kind),
            seed,
            name,
        )
        frames.append(job_metrics(tasks, job_rows))
    return pd.concat(frames, ignore_index=True)


def fingerprint_rows(job_metrics: pd.DataFrame, kind: str, paper_table: str) -> pd.DataFrame:
    """Table 3's mean TPR/FPR/F1 per method over the scored jobs, beside the paper's row."""
    paper = read_paper_table3(paper_table)
    paper = paper[paper["dataset"].str.lower() == PAPER_TRACE_OF_KIND[kind]]
    summary = summary_table(job_metrics)
    long = table3_long(summary, paper.assign(dataset=summary["dataset"].iloc[0]))
    return long[["method", "TPR", "FPR", "F1", "paper_TPR", "paper_FPR", "paper_F1"]]


def run_trial(
    *,
    dataset_name: str,
    dataset: dict,
    settings: dict[str, Any],
    seeds: list[int],
    n_jobs: int,
    methods: list[str],
    method_params: dict[str, dict],
    replay: dict,
    paper_table: str,
    workdir: str | None = None,
    realism: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score `settings`: every seed's trace pooled (jobs of all seeds, as one dataset), each
    method's Table 3 row and the calibration set's distance. The method seeds are the trial
    seeds too: nothing in a trial derives from the seed the fit is judged on. With `realism`
    (settings.realism_settings), also the latency-tail shape distance of the settings' traces
    to the real task_events (`shape_distance`; the search's constraint), and with its
    `reach_tolerance` their reach's gap to the real rows' (`reach_gap`)."""
    began = time.perf_counter()
    settings_replay = paper_replay(dataset, replay)
    frames = []
    with tempfile.TemporaryDirectory(prefix="calibration-", dir=workdir) as tmp:
        for seed in seeds:
            folder = Path(tmp) / f"seed-{seed}"
            converted = trial_data(dataset, settings, n_jobs, int(seed), folder)
            metrics = score_methods(
                converted, dataset, dataset_name, methods, method_params, settings_replay, seed
            )
            frames.append(metrics.assign(job_id=f"s{seed}:" + metrics["job_id"].astype(str)))
    job_metrics = pd.concat(frames, ignore_index=True)
    rows = fingerprint_rows(job_metrics, dataset["kind"], paper_table)
    distance, n_rows = set_distance(rows)
    real_rows = {"shape_distance": None}
    if realism is not None:
        from stragglers.calibrate.realism import trial_realism

        real_rows = trial_realism(settings, dataset.get("generator") or {}, seeds, realism)
    seconds = time.perf_counter() - began
    log.info(
        "%s %s: distance %.4f over %d rows (%.1f s)",
        dataset_name,
        settings,
        distance,
        n_rows,
        seconds,
    )
    return {
        "settings": settings,
        "distance": None if pd.isna(distance) else distance,
        "rows_scored": n_rows,
        **real_rows,  # shape_distance (None unless held to the real rows), reach_gap
        "seconds": seconds,
        "methods": {
            row.method: {
                "TPR": _number(row.TPR),
                "FPR": _number(row.FPR),
                "F1": _number(row.F1),
                "paper_TPR": _number(row.paper_TPR),
                "paper_FPR": _number(row.paper_FPR),
                "paper_F1": _number(row.paper_F1),
            }
            for row in rows.itertuples()
        },
    }


def _number(value) -> float | None:
    return None if pd.isna(value) else float(value)
