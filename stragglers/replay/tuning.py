"""The paper's tuning protocol: each point of a method's parameter grid replayed on the tuning
jobs only and scored; the best mean F1 wins (rule tune_method, docs/methods.md)."""

from __future__ import annotations

import itertools
import logging
from pathlib import Path
from typing import Any

from stragglers.formats.jobs import read_manifest, tuning_job_ids
from stragglers.replay.service import JobSelection, MethodRun, replay_methods

log = logging.getLogger(__name__)


def parameter_grid(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in the config's order."""
    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"tuning.grids: {name} must be a non-empty list of values")
    names = list(grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]


def tune_on_tuning_jobs(
    converted_dir: Path | str,
    kind: str,
    *,
    dataset: str,
    label: str,
    method: str,
    params: dict[str, Any],
    grid: dict[str, list[Any]],
    n_jobs: int,
    replay: dict[str, Any],
    seed: int,
    kill_delay: float | None = None,
    method_dirs: list[str] = (),
) -> dict[str, Any]:
    """Method `method` (labelled `label`) with `params` and each point of `grid` over it,
    replayed on the first `n_jobs` jobs by id (formats.jobs.tuning_job_ids) and scored: the
    points' mean F1 and the best (ties: the first in grid order)."""
    job_ids = tuning_job_ids(read_manifest(converted_dir), n_jobs)
    points = parameter_grid(grid)
    replayed = replay_methods(
        converted_dir,
        kind,
        [MethodRun(label, method, {**params, **point}) for point in points],
        dataset=dataset,
        seed=seed,
        replay=replay,
        kill_delay=kill_delay,
        selection=JobSelection(only_jobs=tuple(job_ids), reuse=True),
        score=True,
        method_dirs=method_dirs,
    )
    scores = []
    for point, result in zip(points, replayed):
        scored = result.metrics[result.metrics["status"] == "ok"]
        scores.append(
            {
                "params": point,
                "mean_F1": float(scored["F1"].mean()) if len(scored) else None,
                "jobs_scored": int(len(scored)),
                "jobs_failed": int((result.jobs["status"] == "failed").sum()),
            }
        )
        log.info("%s %s: mean F1 %s", label, point, scores[-1]["mean_F1"])
    usable = [s for s in scores if s["mean_F1"] is not None]
    if not usable:
        raise RuntimeError(f"{label}: no grid point could be scored on the tuning jobs {job_ids}")
    best = max(usable, key=lambda s: s["mean_F1"])  # max keeps the first of equal scores
    return {
        "dataset": dataset,
        "method": label,
        "tuning_jobs": job_ids,
        "base_params": params,
        "grid": scores,
        "best_params": best["params"],
        "best_mean_F1": best["mean_F1"],
    }
