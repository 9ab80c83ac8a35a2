"""What the prediction rules call: one method replayed over one shard, and tuning on the
tuning jobs (workflow/rules/predict.smk).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd

from stragglers.formats.datasets import last_columns
from stragglers.formats.jobs import iter_shard_jobs, read_manifest, tuning_job_ids
from stragglers.io import dump_json, write_parquet_atomic
from stragglers.replay.core import ReplaySettings
from stragglers.replay.runner import run_method_on_jobs

log = logging.getLogger(__name__)


def predict(
    *,
    manifest: Path | str,
    shard_jobs: Any,
    tuned: str | list,
    sources: Any = (),
    tasks: Path | str,
    jobs: Path | str,
    dataset: str,
    method: str,
    shard: int | str,
    kind: str,
    method_name: str,
    method_params: dict[str, Any],
    replay: dict[str, Any],
    seed: int,
    kill_delay: float | None = None,
    method_dirs: list[str] = (),
    tuning_jobs: int = 0,
) -> pd.DataFrame:
    """Rule predict: replay method `method_name` (labelled `method`, the config's entry) over
    one shard of the converted dataset whose manifest is `manifest` (`shard_jobs`, the shard's
    job files, and `sources`, the method's own files, only order the job). With `tuning_jobs`, the tuning
    jobs are left out; with `tuned` (a tune_method output), its best parameters override
    `method_params`. Writes the `tasks` and `jobs` prediction files."""
    converted_dir, shard, label = Path(manifest).parent, int(shard), method
    settings = ReplaySettings(**replay, kill_delay=kill_delay)
    params = dict(method_params)
    # imported here: evaluation code paths never import method code
    from stragglers.methods import get_method, load_method_dirs

    load_method_dirs(list(method_dirs))
    method_class = get_method(method_name)
    if tuned:
        best = json.loads(Path(tuned).read_text())["best_params"]
        params = {**params, **best}
        log.info("%s: tuned parameters %s", label, best)
    history = None
    if method_class.cross_job:  # learns from earlier jobs of every shard (CONTRACT B)
        from stragglers.replay.history import JobHistory

        history = JobHistory(
            read_manifest(converted_dir),
            converted_dir,
            kind,
            seed=seed,
            machine_state=method_class.uses_machine_state,
        )
    predicted = run_method_on_jobs(
        iter_shard_jobs(
            converted_dir,
            kind,
            shard,
            skip_tuning_jobs=tuning_jobs,
            machine_state=method_class.uses_machine_state,
        ),
        method_class,
        params,
        settings,
        last_columns(kind, converted_dir),
        seed,
        dataset,
        history=history,
        label=label,
    )
    out_tasks, out_jobs = tasks, jobs
    tasks, jobs = predicted
    write_parquet_atomic(tasks, out_tasks)
    write_parquet_atomic(jobs, out_jobs)
    failed = jobs[jobs["status"] == "failed"]
    log.info(
        "%s / %s / shard %d: %d jobs, %d failed", dataset, label, shard, len(jobs), len(failed)
    )
    return jobs


def parameter_grid(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in the config's order."""
    import itertools

    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"tuning.grids: {name} must be a non-empty list of values")
    names = list(grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]


def tune_method(
    *,
    manifest: Path | str,
    converted_jobs: Any,
    sources: Any = (),
    tuning: Path | str,
    dataset: str,
    method: str,
    kind: str,
    method_name: str,
    method_params: dict[str, Any],
    grid: dict[str, list[Any]],
    replay: dict[str, Any],
    seed: int,
    kill_delay: float | None = None,
    n_jobs: int,
    method_dirs: list[str] = (),
) -> dict[str, Any]:
    """Rule tune_method, the paper's protocol: each grid point on the tuning jobs only; best
    mean F1 wins (ties: the first in grid order), written to `tuning`. The tuning jobs are
    left out of every evaluation. Names as for predict (`converted_jobs`, `sources`: ordering
    only)."""
    converted_dir, label, params = Path(manifest).parent, method, dict(method_params)
    settings = ReplaySettings(**replay, kill_delay=kill_delay)
    from stragglers.evaluate.metrics import job_metrics
    from stragglers.methods import get_method, load_method_dirs

    load_method_dirs(list(method_dirs))
    method_class = get_method(method_name)
    job_ids = tuning_job_ids(read_manifest(converted_dir), n_jobs)
    jobs = list(
        iter_shard_jobs(
            converted_dir,
            kind,
            None,
            only_jobs=job_ids,
            machine_state=method_class.uses_machine_state,
        )
    )
    history = None
    if method_class.cross_job:
        from stragglers.replay.history import JobHistory

        history = JobHistory(
            read_manifest(converted_dir),
            converted_dir,
            kind,
            seed=seed,
            machine_state=method_class.uses_machine_state,
        )
    scores = []
    for point in parameter_grid(grid):
        tasks, job_rows = run_method_on_jobs(
            iter(jobs),
            method_class,
            {**params, **point},
            settings,
            last_columns(kind, converted_dir),
            seed,
            dataset,
            history=history,
            label=label,
        )
        metrics = job_metrics(tasks, job_rows)
        scored = metrics[metrics["status"] == "ok"]
        scores.append(
            {
                "params": point,
                "mean_F1": float(scored["F1"].mean()) if len(scored) else None,
                "jobs_scored": int(len(scored)),
                "jobs_failed": int((job_rows["status"] == "failed").sum()),
            }
        )
        log.info("%s %s: mean F1 %s", label, point, scores[-1]["mean_F1"])
    usable = [s for s in scores if s["mean_F1"] is not None]
    if not usable:
        raise RuntimeError(f"{label}: no grid point could be scored on the tuning jobs {job_ids}")
    best = max(usable, key=lambda s: s["mean_F1"])  # max keeps the first of equal scores
    result = {
        "dataset": dataset,
        "method": label,
        "tuning_jobs": job_ids,
        "base_params": params,
        "grid": scores,
        "best_params": best["params"],
        "best_mean_F1": best["mean_F1"],
    }
    dump_json(result, tuning)
    return result


def protocol_job_metrics(
    *,
    converted_dir: Path | str,
    dataset: str,
    kind: str,
    methods: dict[str, dict[str, Any]],
    replay: dict[str, Any],
    protocol: str,
    seed: int,
    tuning_jobs: int = 0,
) -> pd.DataFrame:
    """Each of `methods` (name -> parameters) replayed in memory over every job of the dataset
    under the `protocol` preset (the config's protocol and `overrides` set aside) and scored
    per job as evaluate_dataset scores the predict rule's files: confusion matrix, TPR, FPR,
    F1 and the timing columns. With `tuning_jobs`, the tuning jobs are left out, as there."""
    from stragglers.evaluate import timing
    from stragglers.evaluate.metrics import job_metrics
    from stragglers.formats.predictions import KEYS
    from stragglers.methods import get_method, method_entry

    plain = {k: v for k, v in replay.items() if k not in ("protocol", "overrides")}
    settings = ReplaySettings(**{**plain, "protocol": protocol})
    frames = []
    for name, entry in methods.items():
        # a labelled entry ({method: ..., params}) runs its method under the label
        method, params = method_entry(name, entry)
        # the jobs read again per method, one at a time: memory holds one job, not the trace
        tasks, job_rows = run_method_on_jobs(
            iter_shard_jobs(converted_dir, kind, None, skip_tuning_jobs=tuning_jobs),
            get_method(method),
            params,
            settings,
            last_columns(kind, converted_dir),
            seed,
            dataset,
            label=name,
        )
        frames.append(
            job_metrics(tasks, job_rows).merge(
                timing.timing_job_metrics(tasks, job_rows, validated=True), on=KEYS, how="left"
            )
        )
        log.info("%s: %s under %s done", dataset, name, protocol)
    return pd.concat(frames, ignore_index=True)
