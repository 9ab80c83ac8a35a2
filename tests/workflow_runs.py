"""Snakemake runs for the tests: the config files of tests/configs/, the command line, and the
one local reference run of the tiny config per test session (fixtures in tests/conftest.py).

The end-to-end checks (tests/test_workflow.py), the cluster-generic run and the SLURM run all
compare with one local run of tests/configs/tiny/config.yaml. Under pytest-xdist every worker
is its own process, so the first worker that asks runs it under a file lock in the session's
shared temporary folder and the others wait for it and read its result (pytest-xdist's
documented pattern for session-scoped data).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tests" / "configs"

PLACEHOLDER = re.compile(r"\$\{([a-z0-9_]+)\}")

# a whole Snakemake run of the tiny config: ~3 min on 2 idle cores, 25 min at load average 35
RUN_TIMEOUT_S = 3600


def load_config(name: str, **values: Any) -> dict[str, Any]:
    """tests/configs/<name>/config.yaml with its ${...} placeholders filled from `values`
    (and ${root}, the repository). A value that is a placeholder alone takes the given value
    as is (a number stays a number); a placeholder inside a longer string is formatted in."""
    path = CONFIGS / name / "config.yaml"
    values = {"root": str(ROOT), **values}

    def fill(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: fill(value) for key, value in node.items()}
        if isinstance(node, list):
            return [fill(value) for value in node]
        if not isinstance(node, str):
            return node
        missing = [name for name in PLACEHOLDER.findall(node) if name not in values]
        if missing:
            raise KeyError(f"{path}: no value given for ${{{missing[0]}}} in {node!r}")
        whole = PLACEHOLDER.fullmatch(node)
        if whole:
            return values[whole[1]]
        return PLACEHOLDER.sub(lambda m: str(values[m[1]]), node)

    return fill(yaml.safe_load(path.read_text()))


def write_config(config: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def snakemake_command(workdir: Path, config: Path, *args: str) -> list[str]:
    """`snakemake` on this repository's Snakefile in `workdir`, with `config` only."""
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(config),
        "--replace-workflow-config",
        *args,
    ]


def run_snakemake(
    workdir: Path, config: Path, *args: str, timeout: float = RUN_TIMEOUT_S
) -> subprocess.CompletedProcess:
    """Run `snakemake` (see snakemake_command) and return the finished process."""
    return subprocess.run(
        snakemake_command(workdir, config, *args), capture_output=True, text=True, timeout=timeout
    )


@dataclass(frozen=True)
class ReferenceRun:
    """The local run of the tiny config: its working directory, config, exit code and log."""

    workdir: Path
    config: Path
    returncode: int
    log: str
    wall_s: float

    def check(self) -> None:
        assert self.returncode == 0, f"the local reference run failed:\n{self.log[-6000:]}"


def reference_run(shared: Path, bucket: Path, bucket_url: str) -> ReferenceRun:
    """The local run of tests/configs/tiny/config.yaml in `shared`/reference: run once (the
    first caller, under a lock), then read by every caller and worker."""
    shared.mkdir(parents=True, exist_ok=True)
    folder, result = shared / "reference", shared / "reference.json"
    with FileLock(str(shared / "reference.lock")):
        if not result.exists():
            config = write_config(
                load_config("tiny", bucket=str(bucket), bucket_url=bucket_url),
                folder / "config.yaml",
            )
            began = time.perf_counter()
            # a failure is recorded, not raised: the other workers read it instead of starting
            # the run again over its incomplete files
            try:
                run = run_snakemake(folder, config, "--cores", "2")
                returncode, log = run.returncode, run.stdout + run.stderr
            except subprocess.TimeoutExpired as timeout:
                output = [
                    o.decode() if isinstance(o, bytes) else o or ""
                    for o in (timeout.stdout, timeout.stderr)
                ]
                returncode, log = -1, f"{timeout}\n" + "".join(output)
            record = {"returncode": returncode, "log": log, "wall_s": time.perf_counter() - began}
            result.write_text(json.dumps(record))
        record = json.loads(result.read_text())
    return ReferenceRun(
        workdir=folder,
        config=folder / "config.yaml",
        returncode=record["returncode"],
        log=record["log"],
        wall_s=record["wall_s"],
    )


def xdist_worker() -> str | None:
    """The pytest-xdist worker id (gw0, gw1, ...), None outside xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER")
