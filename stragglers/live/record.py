"""Record a running Spark application's tasks, poll by poll:

    python -m stragglers.live.record --url http://driver:4040 [--app ID] --out DIR [--interval 10]

polls the monitoring REST API until the application ends (or SIGINT / SIGTERM) and writes
DIR/tasks.csv and DIR/usage.csv, a task table (docs/your-own-trace.md) whose usage windows hold
what the event log cannot: each running attempt's metrics as heartbeats reported them at each
poll (docs/live.md). Running it again with the same DIR continues the recording.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from stragglers.live.client import LiveError, RestClient
from stragglers.live.polling import Poller, Stop, resolve_app, run
from stragglers.live.recording import META, Recording


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url", required=True, help="the driver's UI (http://host:4040) or a History Server"
    )
    parser.add_argument("--app", help="application id (default: the one running application)")
    parser.add_argument(
        "--out", required=True, help="folder of the recording (created; reused to continue)"
    )
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between polls (10)")
    parser.add_argument(
        "--lag",
        type=float,
        default=0.5,
        help="seconds a poll's time is set before its first request, for the UI's late events (0.5)",
    )
    parser.add_argument("--retries", type=int, default=4, help="retries of a failed request (4)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per request (10)")


def open_recording(args, keep_windows: bool = False) -> tuple[Poller, Recording]:
    """The client, the application (checked before anything is written) and the recording."""
    if args.interval <= 0 or args.lag < 0:
        raise LiveError("--interval must be > 0 and --lag >= 0")
    client = RestClient(args.url, timeout=args.timeout, retries=args.retries)
    existing = None
    meta = Path(args.out) / META
    if meta.exists() and args.app is None:  # a restart: the application recorded there
        existing = json.loads(meta.read_text())["app_id"]
    app = resolve_app(client, args.app or existing)
    settings = {"url": args.url, "interval": args.interval, "lag": args.lag}
    recording = Recording(args.out, app, settings, keep_windows=keep_windows)
    return Poller(client, recording, lag=args.lag), recording


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    try:
        poller, recording = open_recording(args)
        print(
            f"recording {recording.app_id} from {args.url} into {args.out} "
            f"({len(recording.poll_times)} polls there already)",
            file=sys.stderr,
            flush=True,
        )
        with Stop() as stop:
            why = run(poller, args.interval, stop=stop)
    except LiveError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(
        f"done: {why}; {len(recording.poll_times)} polls, {len(recording.attempts)} attempts "
        f"in {args.out}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
