"""The live recorder's and watcher's cost per poll on a large stage, served by the stub API of
the tests (tests/live_stub.py) in its own process:

    python bench/live_poll.py [--tasks 10000] [--polls 6] [--method NURD]

One stage of `--tasks` running tasks (and 5 % more already finished, so that prediction
starts), polled `--polls` times back to back. Prints, per poll, the CPU seconds of the
recorder (the poll: requests, parsing, the recording's state; and writing its files) and of
the watcher (the checkpoint and the method), then the process's peak resident memory. The
stub's own work is in the other process and not counted.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STUB = """
import sys, time
sys.path.insert(0, {tests!r})
from live_stub import SparkStub, StubStage, StubTask
n, done = {n}, {done}
tasks = [StubTask(i, 0, 0.0, 0.5 + (i % 7) * 0.01) for i in range(done)]
tasks += [StubTask(done + i, 0, 0.0, 3600.0, cpu=0.1 + (i % 10) * 0.05) for i in range(n)]
stub = SparkStub([StubStage(0, tasks)])
print(stub.url, flush=True)
time.sleep(3600)
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--polls", type=int, default=6)
    parser.add_argument("--method", default="NURD")
    args = parser.parse_args(argv)
    from stragglers.live.client import RestClient
    from stragglers.live.polling import Poller, resolve_app
    from stragglers.live.recording import Recording
    from stragglers.live.watch import Watcher

    done = args.tasks // 20
    stub = subprocess.Popen(
        [sys.executable, "-c", STUB.format(tests=str(ROOT / "tests"), n=args.tasks, done=done)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = stub.stdout.readline().strip()
        time.sleep(1.0)  # the finished tasks end, the others run
        client = RestClient(url, timeout=60)
        with tempfile.TemporaryDirectory() as tmp:
            recording = Recording(tmp, resolve_app(client, None), {"interval": 1.0}, True)
            poller = Poller(client, recording, lag=0.0)
            settings = {
                "method": args.method,
                "label": args.method,
                "params": {},
                "seed": 0,
                "threshold": None,
                "start_fraction": 0.04,
                "straggler_quantile": 0.9,
                "min_tasks": 10,
                "interval": 1.0,
            }
            with open(Path(tmp) / "watch.jsonl", "w") as events:
                watcher = Watcher(poller, settings, events, open("/dev/null", "w"))
                print(
                    "poll  recorder_cpu_s  writing_cpu_s  watcher_cpu_s  windows  flags  usage_MB"
                )
                for k in range(args.polls):
                    time.sleep(0.3)
                    began = time.process_time()
                    update, stats = poller.poll()
                    polled = time.process_time()
                    recording.commit(update, stats)
                    written = time.process_time()
                    watcher.on_poll(update, stats)
                    watched = time.process_time()
                    size = (Path(tmp) / "usage.csv").stat().st_size / 1e6
                    flags = json.loads(Path(events.name).read_text().splitlines()[-1])["flags"]
                    print(
                        f"{k:4d}  {polled - began:14.2f}  {written - polled:13.2f}  "
                        f"{watched - written:13.2f}  {len(update.windows):7d}  {flags:5d}  {size:8.1f}",
                        flush=True,
                    )
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak resident memory of the recorder and watcher: {peak:.0f} MB")
    finally:
        stub.kill()
        stub.wait()


if __name__ == "__main__":
    main()
