"""Replay and score: methods replayed over a converted dataset's jobs, each cross-job method
with the dataset's history, scored when asked. The one place every replay is set up: the
predict and tuning rules, the fingerprint's and the sensitivity map's paper runs (through
`protocol_job_metrics`), the calibration's trials, the reproduction audit and the benchmarks
call `replay_methods`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from stragglers.formats.dataset_spec import plain_replay
from stragglers.formats.datasets import last_columns
from stragglers.formats.jobs import Job, iter_shard_jobs, read_manifest
from stragglers.replay.core import ReplaySettings
from stragglers.replay.runner import run_method_on_jobs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MethodRun:
    """One replay: the registered method `method` with `params`, named `label` in the outputs
    and seeded by it (stragglers.methods.method_entry reads a config entry into the two)."""

    label: str
    method: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JobSelection:
    """Which jobs of the converted dataset a replay reads, and how. `shard` None: every shard;
    `skip_tuning_jobs`: the first n jobs by id left out; `only_jobs`: these ids only. `reuse`:
    read once and kept in memory for every run (grid points, several methods on a few jobs);
    else read again for each run, one job at a time (a shard, a whole dataset). `jobs`: jobs
    already read, replayed as given (a benchmark timing the replay alone)."""

    shard: int | None = None
    skip_tuning_jobs: int = 0
    only_jobs: tuple[str, ...] | None = None
    reuse: bool = False
    jobs: tuple[Job, ...] | None = None


@dataclass(frozen=True)
class Replayed:
    """One run's predictions (runner.run_method_on_jobs's tasks and job rows), the settings it
    ran under, its per-job metrics (None unless scored) and the seconds of replay and scoring."""

    run: MethodRun
    settings: ReplaySettings
    tasks: pd.DataFrame
    jobs: pd.DataFrame
    metrics: pd.DataFrame | None
    seconds: float


def replay_settings(
    replay: dict[str, Any],
    protocol: str | None = None,
    overrides: dict[str, Any] | None = None,
    kill_delay: float | None = None,
) -> ReplaySettings:
    """The config's replay section as settings. With `protocol`, that preset replaces the
    section's protocol and its overrides (`overrides`: the rules flipped from it instead)."""
    if protocol is None:
        if overrides is not None:
            raise ValueError("replay_settings: overrides are set with a protocol")
        return ReplaySettings(**replay, kill_delay=kill_delay)
    return ReplaySettings(
        **plain_replay(replay), protocol=protocol, overrides=overrides, kill_delay=kill_delay
    )


def replay_methods(
    converted_dir: Path | str,
    kind: str,
    runs: Iterable[MethodRun],
    *,
    dataset: str,
    seed: int,
    replay: dict[str, Any],
    protocol: str | None = None,
    overrides: dict[str, Any] | None = None,
    kill_delay: float | None = None,
    selection: JobSelection = JobSelection(),
    score: bool = False,
    timing: bool = False,
    method_dirs: Iterable[str] = (),
) -> Iterator[Replayed]:
    """Each of `runs` replayed over the `selection` of the converted dataset in
    `converted_dir` (of `kind`), one at a time and in order, under the settings
    `replay_settings` makes of `replay`, `protocol`, `overrides` and `kill_delay`.

    A cross-job method gets the dataset's JobHistory (every shard, whatever the selection),
    a method that reads the machine's state gets it in its jobs and its history. With
    `score`, each run's per-job metrics (evaluate.metrics.job_metrics); with `timing` as well,
    evaluate.timing's columns beside them. `method_dirs`: folders of more methods."""
    # imported here: the evaluation rules import this module and never load method code
    from stragglers.methods import get_method, load_method_dirs

    converted_dir = Path(converted_dir)
    settings = replay_settings(replay, protocol, overrides, kill_delay)
    last = last_columns(kind, converted_dir)
    load_method_dirs(list(method_dirs))
    kept: dict[bool, list[Job]] = {}  # with `reuse`: the jobs read with and without state
    histories: dict[bool, Any] = {}  # one history per machine-state reading, shared by runs

    def jobs_for(machine_state: bool) -> Iterator[Job]:
        if selection.jobs is not None:
            return iter(selection.jobs)
        if selection.reuse and machine_state in kept:
            return iter(kept[machine_state])
        read = iter_shard_jobs(
            converted_dir,
            kind,
            selection.shard,
            skip_tuning_jobs=selection.skip_tuning_jobs,
            only_jobs=None if selection.only_jobs is None else list(selection.only_jobs),
            machine_state=machine_state,
        )
        if not selection.reuse:
            return read
        kept[machine_state] = list(read)
        return iter(kept[machine_state])

    def history_for(machine_state: bool):
        if machine_state not in histories:
            from stragglers.replay.history import JobHistory

            histories[machine_state] = JobHistory(
                read_manifest(converted_dir),
                converted_dir,
                kind,
                seed=seed,
                machine_state=machine_state,
            )
        return histories[machine_state]

    for run in runs:
        method_class = get_method(run.method)
        machine_state = bool(method_class.uses_machine_state)
        jobs = jobs_for(machine_state)  # read before the clock starts, when kept
        began = time.perf_counter()
        tasks, job_rows = run_method_on_jobs(
            jobs,
            method_class,
            dict(run.params),
            settings,
            last,
            seed,
            dataset,
            history=history_for(machine_state) if method_class.cross_job else None,
            label=run.label,
        )
        metrics = score_jobs(tasks, job_rows, timing) if score or timing else None
        yield Replayed(run, settings, tasks, job_rows, metrics, time.perf_counter() - began)


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
    from stragglers.methods import method_entry  # the evaluation rules never load method code

    # a labelled entry ({method: ..., params}) runs its method under the label; the jobs are
    # read again per method, one at a time: memory holds one job, not the trace
    runs = [MethodRun(name, *method_entry(name, entry)) for name, entry in methods.items()]
    frames = []
    for result in replay_methods(
        converted_dir,
        kind,
        runs,
        dataset=dataset,
        seed=seed,
        replay=replay,
        protocol=protocol,
        selection=JobSelection(skip_tuning_jobs=tuning_jobs),
        timing=True,
    ):
        frames.append(result.metrics)
        log.info("%s: %s under %s done", dataset, result.run.label, protocol)
    return pd.concat(frames, ignore_index=True)


def score_jobs(tasks: pd.DataFrame, job_rows: pd.DataFrame, timing: bool) -> pd.DataFrame:
    """Per-job metrics as evaluate_dataset scores the predict rule's files: the confusion
    matrix, TPR, FPR and F1; with `timing`, evaluate.timing's columns beside them."""
    from stragglers.evaluate.metrics import job_metrics

    metrics = job_metrics(tasks, job_rows)
    if not timing:
        return metrics
    from stragglers.evaluate import timing as timing_metrics
    from stragglers.formats.predictions import KEYS

    return metrics.merge(
        timing_metrics.timing_job_metrics(tasks, job_rows, validated=True), on=KEYS, how="left"
    )
