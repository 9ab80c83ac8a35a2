"""One calibration trial: small traces generated with the trial's settings, converted, the
calibration methods replayed under `protocol: paper` and scored as Table 3 scores them, and
the fingerprint distance to the search's target: the paper's Table 3 rows, or a real
dataset's own rows under `protocol: paper` (`calibration.targets`; docs/calibration.md).

Each stage is the pipeline's own function (traces.generate, convert.one_process,
replay.service, evaluate.metrics, evaluate.fingerprint), run in one process on a temporary
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
from stragglers.evaluate.metrics import summary_table
from stragglers.formats.dataset_spec import MIN_TASKS, PRODUCTION_PRIORITIES
from stragglers.formats.datasets import PAPER_TRACE_OF_KIND
from stragglers.replay.core import dataset_replay
from stragglers.replay.service import JobSelection, MethodRun, replay_methods
from stragglers.report.tables import read_paper_table3, table3_long
from stragglers.traces.generate import generate_alibaba, generate_google

log = logging.getLogger(__name__)

PAPER_TARGET = "Table 3"  # the target's name when a search fits the paper's rows
RATES = ("TPR", "FPR", "F1")


def trial_data(dataset: dict, settings: dict[str, Any], n_jobs: int, seed: int, folder: Path):
    """Generate and convert one seed's trace; the converted folder."""
    kind = dataset["kind"]
    generator = {**(dataset.get("generator") or {}), **settings, "n_jobs": n_jobs, "seed": seed}
    config = generator_class(kind).from_dict(generator)
    raw, converted = folder / "raw", folder / "converted"
    common = {"dataset": "trial", "n_shards": 1, "min_tasks": dataset.get("min_tasks", MIN_TASKS)}
    if kind == "google-2011":
        generate_google(raw, config)
        priorities = tuple(dataset.get("production_priorities", PRODUCTION_PRIORITIES))
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
    replay: dict,
    seed: int,
) -> pd.DataFrame:
    """Per-job metrics of each method on one converted trace (evaluate.job_metrics's rows),
    replayed under `protocol: paper` on the dataset's replay grid (`replay`: the config's
    section, its protocol and overrides set aside)."""
    runs = [MethodRun(method, method, dict(method_params.get(method) or {})) for method in methods]
    replayed = replay_methods(
        converted,
        dataset["kind"],
        runs,
        dataset=name,
        seed=seed,
        replay=dataset_replay(replay, dataset),
        protocol="paper",
        selection=JobSelection(reuse=True),
        score=True,
    )
    return pd.concat([result.metrics for result in replayed], ignore_index=True)


def target_rates(job_metric_files: list[str]) -> pd.DataFrame:
    """A real dataset's rows as a search target: per method, the mean TPR, FPR and F1 over the
    jobs it scored (the job-metrics CSVs of its `protocol: paper` replays, rule
    fingerprint_replay), as the fingerprint's real-job distance reads them."""
    if not job_metric_files:
        raise ValueError("a calibration target needs the real dataset's job metrics; none given")
    metrics = pd.concat([pd.read_csv(f) for f in job_metric_files], ignore_index=True)
    return summary_table(metrics)[["method", "TPR", "FPR", "FNR", "F1"]]


def fingerprint_rows(
    job_metrics: pd.DataFrame, kind: str, paper_table: str, target: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Table 3's mean TPR/FPR/F1 per method over the scored jobs, beside the paper's row and
    the target's (`target_<rate>`: `target`'s rows, see `target_rates`; the paper's without)."""
    paper = read_paper_table3(paper_table)
    paper = paper[paper["dataset"].str.lower() == PAPER_TRACE_OF_KIND[kind]]
    summary = summary_table(job_metrics)
    dataset = summary["dataset"].iloc[0]
    long = table3_long(summary, paper.assign(dataset=dataset))
    rows = long[["method", *RATES, *(f"paper_{r}" for r in RATES)]]
    if target is None:
        return rows.assign(**{f"target_{r}": rows[f"paper_{r}"] for r in RATES})
    aimed = table3_long(summary, target.assign(dataset=dataset))
    return rows.assign(**{f"target_{r}": aimed[f"paper_{r}"].to_numpy() for r in RATES})


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
    target: pd.DataFrame | None = None,
    target_name: str = PAPER_TARGET,
) -> dict[str, Any]:
    """Score `settings`: every seed's trace pooled (jobs of all seeds, as one dataset), each
    method's Table 3 row and the calibration set's distance to the target (`target`: a real
    dataset's rates, `target_rates`; the paper's Table 3 without), with the distance to Table 3
    beside it (`paper_distance`). The method seeds are the trial
    seeds too: nothing in a trial derives from the seed the fit is judged on. With `realism`
    (settings.realism_settings), also the latency-tail shape distance of the settings' traces
    to the real task_events (`shape_distance`; the search's constraint), and with its
    `reach_tolerance` their reach's gap to the real rows' (`reach_gap`)."""
    began = time.perf_counter()
    frames = []
    with tempfile.TemporaryDirectory(prefix="calibration-", dir=workdir) as tmp:
        for seed in seeds:
            folder = Path(tmp) / f"seed-{seed}"
            converted = trial_data(dataset, settings, n_jobs, int(seed), folder)
            metrics = score_methods(
                converted, dataset, dataset_name, methods, method_params, replay, seed
            )
            frames.append(metrics.assign(job_id=f"s{seed}:" + metrics["job_id"].astype(str)))
    job_metrics = pd.concat(frames, ignore_index=True)
    rows = fingerprint_rows(job_metrics, dataset["kind"], paper_table, target)
    distance, n_rows = set_distance(rows, reference="target")
    paper_distance, _ = set_distance(rows)
    real_rows = {"shape_distance": None}
    if realism is not None:
        from stragglers.calibrate.realism import trial_realism

        real_rows = trial_realism(settings, dataset.get("generator") or {}, seeds, realism)
    seconds = time.perf_counter() - began
    log.info(
        "%s %s: distance %.4f to %s over %d rows, %.4f to Table 3 (%.1f s)",
        dataset_name,
        settings,
        distance,
        target_name,
        n_rows,
        paper_distance,
        seconds,
    )
    return {
        "settings": settings,
        "target": target_name,
        "distance": _number(distance),
        "paper_distance": _number(paper_distance),
        "rows_scored": n_rows,
        **real_rows,  # shape_distance (None unless held to the real rows), reach_gap
        "seconds": seconds,
        "methods": {
            row["method"]: {
                rate: _number(row[rate])
                for rate in (
                    *RATES,
                    *(f"{side}_{r}" for side in ("paper", "target") for r in RATES),
                )
            }
            for row in rows.to_dict("records")
        },
    }


def _number(value) -> float | None:
    return None if pd.isna(value) else float(value)
