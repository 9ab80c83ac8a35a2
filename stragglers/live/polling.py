"""The poll loop the recorder and the watcher share: which application, which stages, one
poll (every stage attempt's taskList, paged), the loop until the application ends or a
signal stops it, with one progress line per poll on the terminal.
"""

from __future__ import annotations

import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from stragglers.live.client import HttpError, LiveError, RestClient, Unreachable
from stragglers.live.recording import PollUpdate, Recording, ms_text, numbers_as_read
from stragglers.live.spark import job_id, task_attempt

PAGE = 1000  # TaskData per request: a stage of 10,000 running tasks is 10 requests
SETTLE_POLLS = 5  # polls a finished stage is read again while its attempts still run
GIVE_UP_POLLS = 5  # polls in a row whose application or stage list fails: the run stops


def resolve_app(client: RestClient, app: str | None) -> str:
    """The application to watch: `app` if the URL serves it, else the one running one (a
    driver's UI serves exactly one). Errors name the URL and what it serves."""
    apps = client.get("applications")
    ids = [str(a.get("id")) for a in apps]
    if app is not None:
        if app not in ids:
            raise LiveError(
                f"{client.url}: no application {app!r} (it serves: {', '.join(ids) or 'none'})"
            )
        return app
    running = [a["id"] for a in apps if not all(t.get("completed") for t in a.get("attempts", []))]
    if len(running) == 1:
        return str(running[0])
    if not running and len(ids) == 1:
        return ids[0]
    raise LiveError(
        f"{client.url}: {len(running)} running applications ({', '.join(running) or 'none'} of "
        f"{len(ids)}); name one with --app"
    )


@dataclass
class StageState:
    """A stage attempt as the API last listed it."""

    job_id: str
    stage: int
    attempt: int
    n_tasks: int
    status: str
    name: str = ""
    polls_since_end: int = 0
    settled: bool = False  # ended and every attempt of it ended: not read again


@dataclass
class Poller:
    """Polls one application into a Recording."""

    client: RestClient
    recording: Recording
    lag: float = 0.5  # seconds: the poll's time is this much before its first request
    stages: dict[tuple[int, int], StageState] = field(default_factory=dict)
    completed: bool = False  # the API says the application has ended
    _errors_before: Counter = field(default_factory=Counter)

    def poll(self) -> tuple[PollUpdate, dict[str, Any]]:
        """One poll: the stage list, then each stage attempt's tasks. The poll's time is the
        clock `lag` seconds before the first request, so that a task the API still shows
        running really ran at that time (the UI's listener applies events a little late)."""
        rec = self.recording
        time_ms = int((time.time() - self.lag) * 1000)
        update = PollUpdate(time=float(numbers_as_read([ms_text(time_ms)])[0]))
        info = self.client.get(f"applications/{rec.app_id}")
        self.completed = bool(info.get("attempts")) and all(
            a.get("completed") for a in info["attempts"]
        )
        listed = self.client.get(f"applications/{rec.app_id}/stages")
        running = 0
        for data in sorted(listed, key=lambda s: (s["stageId"], s["attemptId"])):
            key = (int(data["stageId"]), int(data["attemptId"]))
            state = self.stages.get(key)
            if state is None:
                state = StageState(job_id(rec.app_id, *key), *key, int(data.get("numTasks", 0)), "")
                self.stages[key] = state
            state.status, state.name = str(data.get("status", "")), str(data.get("name", ""))
            state.n_tasks = int(data.get("numTasks", state.n_tasks))
            if state.settled or state.status in ("PENDING", "SKIPPED"):
                continue
            try:
                tasks = self._task_list(key)
            except HttpError:
                continue  # counted by the client; read again at the next poll
            rec.update(time_ms, state.job_id, tasks, update)
            still = sum(1 for t in tasks if t.status == "")
            running += still
            if state.status != "ACTIVE":
                state.polls_since_end += 1
                state.settled = still == 0 or state.polls_since_end >= SETTLE_POLLS
        errors = self.client.errors - self._errors_before
        self._errors_before = Counter(self.client.errors)
        if update.late_ends:
            # seen running at an earlier poll whose time was after its end: the UI lagged more
            # than --lag, and that poll's checkpoint saw the attempt running (docs/live.md)
            errors["ended before a poll that saw it running"] = update.late_ends
        stats = {
            "stages_seen": sum(not s.settled for s in self.stages.values()),
            "attempts_running": running,
            "errors": dict(errors),
        }
        return update, stats

    def _task_list(self, key: tuple[int, int]):
        tasks, offset = [], 0
        while True:
            page = self.client.get(
                f"applications/{self.recording.app_id}/stages/{key[0]}/{key[1]}/taskList",
                {"offset": offset, "length": PAGE},
            )
            tasks.extend(t for t in map(task_attempt, page) if t is not None)
            if len(page) < PAGE:
                return tasks
            offset += PAGE


class Stop:
    """Set by SIGINT / SIGTERM: the loop ends after the poll it is in."""

    def __init__(self):
        self.signal: int | None = None
        self._previous: dict[int, Any] = {}

    def __call__(self, signum, frame) -> None:
        self.signal = signum

    def __enter__(self) -> Stop:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._previous[signum] = signal.signal(signum, self)
        return self

    def __exit__(self, *exc) -> None:
        # the caller's handlers back (a test process, an embedding program)
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


def run(
    poller: Poller,
    interval: float,
    on_poll: Callable[[PollUpdate, dict], None] | None = None,
    stop: Stop | None = None,
    out: TextIO = sys.stderr,
    max_polls: int | None = None,
) -> str:
    """Poll every `interval` seconds until the application ends, a signal arrives or the URL
    stops answering after having answered (the driver's UI goes with its application); each
    poll is written before `on_poll` sees it. Returns why it stopped."""
    stop = stop or Stop()
    rec = poller.recording
    done = failed = 0
    while True:
        began = time.monotonic()
        try:
            update, stats = poller.poll()
            failed = 0
        except Unreachable as error:
            return f"the application ended or its UI stopped ({error})"
        except HttpError as error:
            failed += 1
            if failed >= GIVE_UP_POLLS:
                raise LiveError(f"{failed} polls in a row failed; the last: {error}") from None
            print(f"poll skipped: {error}", file=out, flush=True)
            update = None
        if update is not None:
            rec.commit(update, stats)
            if on_poll is not None:
                on_poll(update, stats)
            errors = ", ".join(f"{k} x{v}" for k, v in stats["errors"].items()) or "none"
            print(
                f"poll {len(rec.poll_times) - 1} at {ms_text(round(update.time * 1000))}: "
                f"{stats['stages_seen']} stages open, {stats['attempts_running']} attempts "
                f"running, {len(update.new)} new, {len(update.ended)} ended, "
                f"{len(update.windows)} windows; errors: {errors}",
                file=out,
                flush=True,
            )
            done += 1
        if poller.completed and update is not None:  # its last state written
            return "the application has completed"
        if max_polls is not None and done >= max_polls:
            return f"{max_polls} polls done"
        while stop.signal is None and time.monotonic() - began < interval:
            time.sleep(min(0.1, interval))
        if stop.signal is not None:
            return f"stopped by signal {signal.Signals(stop.signal).name}"
