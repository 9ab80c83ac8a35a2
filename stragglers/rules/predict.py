"""What the prediction rules call: one method replayed over one shard, and tuning on the
tuning jobs (workflow/rules/predict.smk).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd

from stragglers.io import dump_json, write_parquet_atomic
from stragglers.replay.service import JobSelection, MethodRun, replay_methods

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
    shard, params = int(shard), dict(method_params)
    if tuned:
        best = json.loads(Path(tuned).read_text())["best_params"]
        params = {**params, **best}
        log.info("%s: tuned parameters %s", method, best)
    (predicted,) = replay_methods(
        Path(manifest).parent,
        kind,
        [MethodRun(method, method_name, params)],
        dataset=dataset,
        seed=seed,
        replay=replay,
        kill_delay=kill_delay,
        selection=JobSelection(shard=shard, skip_tuning_jobs=tuning_jobs),
        method_dirs=method_dirs,
    )
    write_parquet_atomic(predicted.tasks, tasks)
    write_parquet_atomic(predicted.jobs, jobs)
    failed = predicted.jobs[predicted.jobs["status"] == "failed"]
    log.info(
        "%s / %s / shard %d: %d jobs, %d failed",
        dataset,
        method,
        shard,
        len(predicted.jobs),
        len(failed),
    )
    return predicted.jobs


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
    mean F1 wins (ties: the first in grid order), written to `tuning`
    (stragglers.replay.tuning). The tuning jobs are left out of every evaluation. Names as for
    predict (`converted_jobs`, `sources`: ordering only)."""
    from stragglers.replay.tuning import tune_on_tuning_jobs

    result = tune_on_tuning_jobs(
        Path(manifest).parent,
        kind,
        dataset=dataset,
        label=method,
        method=method_name,
        params=dict(method_params),
        grid=grid,
        n_jobs=n_jobs,
        replay=replay,
        seed=seed,
        kill_delay=kill_delay,
        method_dirs=method_dirs,
    )
    dump_json(result, tuning)
    return result
