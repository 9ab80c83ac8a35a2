"""A stand-in for a Spark driver's monitoring REST API on 127.0.0.1 (an ephemeral port), for
the live commands' tests and bench/live_poll.py: one application whose stage attempts and
task attempts are set out on the wall clock from the stub's start, served as Spark 4 serves
them (`/api/v1/applications[/<app>[/stages[/<id>/<attempt>/taskList]]]`), with HTTP errors
injected on demand.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

APP = "app-20260101000000-0000"


@dataclass
class StubTask:
    index: int
    attempt: int
    launch: float  # seconds after the stub's start
    end: float
    status: str = "SUCCESS"  # how it ends: SUCCESS, FAILED, KILLED
    host: str = "127.0.0.2"
    speculative: bool = False
    cpu: float = 0.5  # CPU-seconds per second, as heartbeats report
    records: float = 100.0  # records read per second


@dataclass
class StubStage:
    stage: int
    tasks: list[StubTask]
    attempt: int = 0

    @property
    def n_tasks(self) -> int:
        return len({t.index for t in self.tasks})


def _date(seconds: float) -> str:
    ms = int(round(seconds * 1000))
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000))
    return f"{whole}.{ms % 1000:03d}GMT"


@dataclass
class SparkStub:
    stages: list[StubStage]
    app_end: float | None = None  # seconds after start when the app reports completed
    heartbeat: float = 0.25
    failures: dict[str, list[int]] = field(default_factory=dict)  # path part -> statuses
    requests: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.t0 = time.time()
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server API
                status, body = stub.answer(self.path)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def now(self) -> float:
        return time.time() - self.t0

    def answer(self, raw: str):
        parsed = urllib.parse.urlparse(raw)
        path = parsed.path
        query = urllib.parse.parse_qs(parsed.query)
        with self.lock:
            self.requests.append(raw)
            for part, codes in self.failures.items():
                if part in path and codes:
                    return codes.pop(0), {"message": "injected"}
        parts = path.strip("/").split("/")
        if parts[:2] != ["api", "v1"] or len(parts) < 3 or parts[2] != "applications":
            return 404, {"message": "no such path"}
        now = self.now()
        app = {
            "id": APP,
            "name": "stub",
            "attempts": [
                {"completed": self.app_end is not None and now >= self.app_end, "sparkUser": "x"}
            ],
        }
        if len(parts) == 3:
            return 200, [app]
        if parts[3] != APP:
            return 404, {"message": f"unknown app: {parts[3]}"}
        if len(parts) == 4:
            return 200, app
        if parts[4] != "stages":
            return 404, {"message": "no such path"}
        if len(parts) == 5:
            return 200, [self.stage_data(s, now) for s in self.stages]
        stage = next(
            (s for s in self.stages if s.stage == int(parts[5]) and s.attempt == int(parts[6])),
            None,
        )
        if stage is None or parts[7:] != ["taskList"]:
            return 404, {"message": "no such stage"}
        tasks = [self.task_data(t, now) for t in stage.tasks if t.launch <= now]
        offset = int(query.get("offset", ["0"])[0])
        length = int(query.get("length", ["20"])[0])
        return 200, tasks[offset : offset + length]

    def stage_data(self, stage: StubStage, now: float) -> dict:
        launched = [t for t in stage.tasks if t.launch <= now]
        done = {t.index for t in stage.tasks if t.status == "SUCCESS" and t.end <= now}
        status = (
            "PENDING" if not launched else "COMPLETE" if len(done) == stage.n_tasks else "ACTIVE"
        )
        return {
            "status": status,
            "stageId": stage.stage,
            "attemptId": stage.attempt,
            "numTasks": stage.n_tasks,
            "numActiveTasks": sum(1 for t in launched if t.end > now),
            "name": f"stage {stage.stage}",
        }

    def task_data(self, task: StubTask, now: float) -> dict:
        running = now < task.end
        seen = (min(now, task.end) - task.launch) // self.heartbeat * self.heartbeat
        ended = task.end - task.launch
        run = ended if not running else seen
        metrics = (
            None
            if running and seen <= 0
            else {
                "executorRunTime": int(run * 1000),
                "executorCpuTime": int(run * task.cpu * 1e9),
                "jvmGcTime": 0,
                "memoryBytesSpilled": 0,
                "diskBytesSpilled": 0,
                "inputMetrics": {
                    "bytesRead": int(run * task.records * 10),
                    "recordsRead": int(run * task.records),
                },
                "outputMetrics": {"bytesWritten": 0, "recordsWritten": 0},
                "shuffleReadMetrics": {"recordsRead": 0, "remoteBytesRead": 0, "localBytesRead": 0},
                "shuffleWriteMetrics": {"bytesWritten": 0, "recordsWritten": 0},
            }
        )
        return {
            "taskId": task.index * 10 + task.attempt,
            "index": task.index,
            "attempt": task.attempt,
            "launchTime": _date(self.t0 + task.launch),
            "duration": int(((now if running else task.end) - task.launch) * 1000),
            "executorId": "1",
            "host": task.host,
            "status": "RUNNING" if running else task.status,
            "taskLocality": "PROCESS_LOCAL",
            "speculative": task.speculative,
            "taskMetrics": metrics,
        }


def skewed_stage(stage: int, n: int, start: float, slow: set[int], seconds: float = 0.6):
    """`n` tasks on two one-slot-ish hosts, two at a time, the `slow` ones four times longer,
    each slow one copied by a speculative attempt that Spark kills when the original ends."""
    tasks, free = [], [start, start]
    for index in range(n):
        slot = 0 if free[0] <= free[1] else 1
        length = seconds * (4 if index in slow else 1)
        launch = free[slot]
        tasks.append(
            StubTask(
                index,
                0,
                launch,
                launch + length,
                host=f"127.0.0.{2 + slot}",
                cpu=0.2 if index in slow else 0.8,
            )
        )
        if index in slow:
            tasks.append(
                StubTask(
                    index,
                    1,
                    launch + 2 * seconds,
                    launch + length + 0.2,
                    "KILLED",
                    f"127.0.0.{3 - slot}",
                    True,
                )
            )
        free[slot] = launch + length
    return StubStage(stage, tasks)
