"""CLI: python -m stragglers.traces.generate google|alibaba --out DIR [--n-jobs N] [--seed S]
[--set knob=value ...] (knobs: docs/generator.md)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from stragglers.traces.generate.alibaba import AlibabaGeneratorConfig, generate_alibaba
from stragglers.traces.generate.google import GoogleGeneratorConfig, generate_google

TRACES = {
    "google": (GoogleGeneratorConfig, generate_google),
    "alibaba": (AlibabaGeneratorConfig, generate_alibaba),
}


def parse_setting(text: str) -> tuple[str, object]:
    """`knob=value` with value read as JSON when possible (numbers, true/false), else text."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise ValueError(f"--set expects knob=value, got {text!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stragglers.traces.generate", description="Write a seeded synthetic trace."
    )
    parser.add_argument("trace", choices=sorted(TRACES))
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--n-jobs", type=int, help="eligible jobs (Alibaba: tasks) to generate")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--n-parts", type=int, help="Google only: files per table")
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE")
    args = parser.parse_args(argv)
    config_class, generate = TRACES[args.trace]
    settings: dict[str, object] = {}
    try:
        for text in args.set:
            key, value = parse_setting(text)
            settings[key] = value
        for key, value in (("n_jobs", args.n_jobs), ("seed", args.seed), ("n_parts", args.n_parts)):
            if value is not None:
                settings[key] = value
        config = config_class.from_dict(settings)
    except (ValueError, TypeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    summary = generate(args.out, config)
    summary.pop("files")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
