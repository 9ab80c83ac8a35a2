"""Flag stragglers of a running Spark application while they run:

    python -m stragglers.live.watch --url http://driver:4040 --method NURD [--params JSON] --out DIR

records the application as `stragglers.live.record` does (DIR/tasks.csv, usage.csv, polls.csv)
and at each poll runs the online method on every stage attempt through the replay's Method
interface and checkpoint contract: the stage's finished tasks so far are the training rows,
its running tasks the candidates (stragglers/live/checkpoint.py). DIR/watch.jsonl gets one
JSON line per event, as it happens (docs/live.md):

- `flag`: a task flagged while it runs (poll time, stage, stage attempt, task index, the
  task's original attempt, score: null, as the Method interface returns decisions only;
  reason);
- `spark_speculative`: a speculative copy Spark launched, at the poll that first saw it;
- `prediction_start`: the first poll a stage is predicted at, with the threshold the method
  is given;
- `poll`: one summary line per poll;
- `stage_end`: when a stage's every task has finished, its flags scored against the real
  latencies (TPR, FPR, F1, lead: docs/definitions.md) and beside Spark's copies.

A task is one unit, as in the replay: it runs from its original attempt's start to the end of
its first finished attempt, whichever that is; a flag names the task and its original
attempt, and a task Spark copied is scored by that same latency.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from stragglers.evaluate.metrics import confusion, rates
from stragglers.evaluate.timing import early_flags, flag_lead
from stragglers.formats.dataset_spec import DEFAULT_SEED
from stragglers.formats.features import prediction_start_count
from stragglers.live.checkpoint import FEATURES, StageView
from stragglers.live.client import LiveError
from stragglers.live.polling import Poller, StageState, Stop, run
from stragglers.live.record import add_common_arguments, open_recording
from stragglers.live.recording import Recording
from stragglers.methods import get_method
from stragglers.methods.base import Checkpoint, JobInfo, Method
from stragglers.replay.core import ReplaySettings, derive_seed, straggler_threshold

EVENTS = "watch.jsonl"
SETTINGS = "watch.json"


def live_settings(settings: dict[str, Any]) -> ReplaySettings:
    """The replay settings a live run and its replay share: protocol causal (the only one a
    live run can follow: the others use final values), checkpoints at the polls."""
    return ReplaySettings(
        checkpoint_interval=float(settings["interval"]),
        grid_origin=0.0,
        start_fraction=float(settings["start_fraction"]),
        straggler_quantile=float(settings["straggler_quantile"]),
        protocol="causal",
    )


def live_method(settings: dict[str, Any]) -> type[Method]:
    """The method class, its parameters checked; a method that needs what a live run cannot
    have (true latencies, earlier finished jobs) is refused."""
    method_class = get_method(settings["method"])
    if method_class.privileged or method_class.cross_job:
        needs = "true latencies" if method_class.privileged else "earlier finished jobs"
        raise LiveError(f"method {settings['method']} needs {needs}: it cannot run live")
    method_class(settings["params"])  # raises naming a bad parameter
    return method_class


def auto_threshold(view: StageView, quantile: float) -> float:
    """The threshold a live run gives the method when the operator gives none: the quantile
    of what is known of every started task's latency at the stage's first prediction (a
    finished task's latency, a running task's elapsed time: a lower bound), frozen then."""
    known = np.where(
        view.task_end <= view.t, view.task_end - view.task_start, view.t - view.task_start
    )
    return float(np.quantile(known, quantile))


@dataclass
class StageWatch:
    method: Method
    threshold: float = float("nan")
    started: bool = False
    flagged: dict[int, float] = field(default_factory=dict)  # task index -> flag time
    done: bool = False


class Watcher:
    def __init__(self, poller: Poller, settings: dict[str, Any], events: TextIO, out: TextIO):
        self.poller = poller
        self.recording: Recording = poller.recording
        self.settings = settings
        self.replay = live_settings(settings)
        self.method_class = live_method(settings)
        self.stages: dict[str, StageWatch] = {}
        self.events = events
        self.out = out

    def emit(self, kind: str, **fields) -> None:
        self.events.write(json.dumps({"kind": kind, **fields}, allow_nan=False) + "\n")
        self.events.flush()

    def on_poll(self, update, stats) -> None:
        t = update.time
        index = len(self.recording.poll_times) - 1
        for attempt in update.new:
            if attempt.speculative:
                stage, stage_attempt = _stage_of(attempt.job_id)
                self.emit(
                    "spark_speculative",
                    poll_time=t,
                    job_id=attempt.job_id,
                    stage=stage,
                    stage_attempt=stage_attempt,
                    task=attempt.task,
                    attempt=attempt.attempt,
                    launch_time=attempt.start,
                )
        by_job: dict[str, list] = {}
        for attempt in self.recording.attempts.values():
            by_job.setdefault(attempt.job_id, []).append(attempt)
        flags = 0
        for state in self.poller.stages.values():
            attempts = by_job.get(state.job_id)
            if not attempts or state.n_tasks < int(self.settings["min_tasks"]):
                continue
            watch = self.stages.get(state.job_id)
            if watch is None:
                seed = derive_seed(int(self.settings["seed"]), self.settings["label"], state.job_id)
                watch = StageWatch(self.method_class(self.settings["params"], seed=seed))
                self.stages[state.job_id] = watch
            if watch.done:
                continue
            windows = self.recording.windows.get(state.job_id, [])
            view = StageView(state.job_id, attempts, windows, t)
            flags += self._predict(state, watch, view, index)
            self._maybe_score(state, watch, attempts, windows)
        self.emit(
            "poll",
            poll=index,
            poll_time=t,
            stages_open=stats["stages_seen"],
            attempts_running=stats["attempts_running"],
            new_attempts=len(update.new),
            windows=len(update.windows),
            flags=flags,
            errors=stats["errors"],
        )

    def _predict(self, state: StageState, watch: StageWatch, view: StageView, index: int) -> int:
        flagged = np.array([task in watch.flagged for task in view.task_ids.tolist()], dtype=bool)
        finished, running, accumulator = view.candidates(flagged)
        needed = prediction_start_count(state.n_tasks, self.replay.start_fraction)
        if (not watch.started and len(finished) < needed) or len(running) == 0:
            return 0
        first = not watch.started
        method = watch.method
        if first:
            given = self.settings.get("threshold")
            watch.threshold = (
                float(given)
                if given is not None
                else auto_threshold(view, self.replay.straggler_quantile)
            )
            method.start_job(self._job_info(state, watch, method))
            self.emit(
                "prediction_start",
                poll_time=view.t,
                job_id=state.job_id,
                threshold=watch.threshold,
                finished=len(finished),
                n_tasks=state.n_tasks,
            )
        fin_x, fin_y, run_x, elapsed = view.arrays(finished, running, accumulator)
        checkpoint = Checkpoint(
            time=float(view.t),
            index=index,
            first_prediction=first,
            finished_tasks=finished,
            finished_features=fin_x,
            finished_latency=fin_y,
            running_tasks=running,
            running_features=run_x,
            running_elapsed=elapsed,
        )
        watch.started = True
        decision = np.asarray(method.predict(checkpoint))
        if decision.shape != running.shape or decision.dtype != bool:
            raise LiveError(
                f"method {method.name} returned {decision.shape} {decision.dtype} decisions for "
                f"{len(running)} running tasks of {state.job_id} at t={view.t}"
            )
        newly = running[decision]
        for position in newly.tolist():
            task = int(view.task_ids[position])
            watch.flagged[task] = view.t
            self.emit(
                "flag",
                poll_time=view.t,
                job_id=state.job_id,
                stage=state.stage,
                stage_attempt=state.attempt,
                task=task,
                attempt=view.original[task],
                score=None,
                reason=(
                    f"{self.settings['label']} at elapsed {view.t - view.task_start[position]:.3f} s "
                    f"(threshold {watch.threshold:.3f} s; {len(finished)} of {state.n_tasks} "
                    f"tasks finished)"
                ),
            )
            print(f"flag {state.job_id} task {task} at {view.t:.3f}", file=self.out, flush=True)
        return len(newly)

    def _job_info(self, state: StageState, watch: StageWatch, method: Method) -> JobInfo:
        return JobInfo(
            job_id=state.job_id,
            n_tasks=state.n_tasks,
            feature_names=FEATURES,
            straggler_threshold=watch.threshold,
            seed=method.seed,
            checkpoint_interval=float(self.replay.checkpoint_interval),
            grid_origin=float(self.replay.grid_origin),
            kill_delay=self.replay.resume_kill_delay,
            rules=self.replay.rules,
        )

    def _maybe_score(self, state: StageState, watch: StageWatch, attempts, windows):
        """At a stage's end (every task finished, the API done with it), its flags scored."""
        if state.status == "ACTIVE" or not state.settled:
            return
        watch.done = True
        # every task, also those launched after the poll's time (a poll's view stops there)
        view = StageView(state.job_id, attempts, windows, np.inf)
        finished = np.isfinite(view.task_end)
        if len(view.task_ids) < state.n_tasks or not finished.all() or state.status != "COMPLETE":
            self.emit(
                "stage_end",
                job_id=state.job_id,
                status=state.status,
                scored=False,
                reason=f"{int(finished.sum())} of {state.n_tasks} tasks finished",
            )
            return
        latency = view.task_end - view.task_start
        tau = straggler_threshold(latency, self.replay.straggler_quantile)
        truth = latency >= tau
        flag_time = np.array([watch.flagged.get(t, np.nan) for t in view.task_ids.tolist()])
        flagged = ~np.isnan(flag_time)
        scores = rates(*confusion(truth, flagged))
        lead = flag_lead(view.task_start, view.task_end, flag_time)[flagged & truth]
        copied = sorted({a.task for a in attempts if a.speculative})
        copied_mask = np.isin(view.task_ids, copied)
        self.emit(
            "stage_end",
            job_id=state.job_id,
            status=state.status,
            scored=True,
            n_tasks=int(len(latency)),
            threshold=float(tau),
            method_threshold=_finite(watch.threshold),
            stragglers=int(truth.sum()),
            flagged=int(flagged.sum()),
            **{k: _finite(v) for k, v in scores.items()},
            median_lead=_finite(np.median(lead)) if len(lead) else None,
            early_flags=int(early_flags(view.task_start, flag_time, tau)[flagged].sum()),
            spark_copied=len(copied),
            spark_copied_stragglers=int((copied_mask & truth).sum()),
            both=int((copied_mask & flagged).sum()),
        )


def _finite(value) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


def _stage_of(job: str) -> tuple[int, int]:
    stage, _, attempt = job.rpartition("_stage")[2].partition(".")
    return int(stage), int(attempt)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_arguments(parser)
    parser.add_argument("--method", required=True, help="a registered online method (NURD, ...)")
    parser.add_argument("--params", default="{}", help="the method's parameters, JSON ({})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the seed (as the config's)")
    parser.add_argument(
        "--threshold",
        type=float,
        help="straggler threshold in seconds the method is given (default: per stage, "
        "estimated at its first prediction; docs/live.md)",
    )
    parser.add_argument("--start-fraction", type=float, default=0.04)
    parser.add_argument("--straggler-quantile", type=float, default=0.90)
    parser.add_argument("--min-tasks", type=int, default=10, help="smaller stages are not watched")
    args = parser.parse_args(argv)
    try:
        params = json.loads(args.params)
        if not isinstance(params, dict):
            raise LiveError(f"--params must be a JSON object, got {args.params!r}")
    except ValueError as error:
        print(f"error: --params is not JSON: {error}", file=sys.stderr)
        return 2
    out = Path(args.out)
    if (out / EVENTS).exists():
        print(f"error: {out / EVENTS} exists: a watch starts in a new folder", file=sys.stderr)
        return 2
    settings = {
        "method": args.method,
        "label": args.method,
        "params": params,
        "seed": args.seed,
        "threshold": args.threshold,
        "start_fraction": args.start_fraction,
        "straggler_quantile": args.straggler_quantile,
        "min_tasks": args.min_tasks,
        "interval": args.interval,
    }
    try:
        live_settings(settings)
        live_method(settings)  # before anything is asked or written
        poller, recording = open_recording(args, keep_windows=True)
        if recording.poll_times:
            raise LiveError(f"{out}: holds a recording already: a watch starts in a new folder")
        (out / SETTINGS).write_text(json.dumps(settings, indent=1) + "\n")
        with open(out / EVENTS, "a") as events:
            watcher = Watcher(poller, settings, events, sys.stderr)
            print(
                f"watching {recording.app_id} at {args.url} with {args.method} into {out}",
                file=sys.stderr,
                flush=True,
            )
            with Stop() as stop:
                why = run(poller, args.interval, on_poll=watcher.on_poll, stop=stop)
    except (LiveError, KeyError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"done: {why}; {len(recording.poll_times)} polls in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
