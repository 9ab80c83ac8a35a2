"""Writing results safely and running one rule's work with its log.

Every output is written under a temporary name beside it and renamed when complete
(`write_atomic`), so a crash never leaves a complete-looking file. Light on purpose: the
workflow imports it when it loads, so pandas is never imported here.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)


def write_atomic(path: Path | str, write: Callable[[Path], Any]) -> Path:
    """`write(staging)` writes the whole file under `<path>.tmp`; then it is renamed to `path`.
    The staging file is removed when `write` raises."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(path.name + ".tmp")
    try:
        write(staging)
        os.replace(staging, path)
    finally:
        staging.unlink(missing_ok=True)
    return path


def write_parquet_atomic(frame: pd.DataFrame, path: Path | str) -> None:
    write_atomic(path, lambda staging: frame.to_parquet(staging, index=False))


def write_csv_atomic(frame: pd.DataFrame, path: Path | str) -> None:
    write_text_atomic(frame.to_csv(index=False), path)


def write_text_atomic(text: str, path: Path | str) -> None:
    write_atomic(path, lambda staging: staging.write_text(text, encoding="utf-8"))


def pyplot():
    """matplotlib.pyplot, drawing to files only (the Agg backend: no display on cluster nodes
    or in CI), imported on first use: loading the workflow imports no matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: Path | str, **savefig_options: Any) -> None:
    """A matplotlib figure written atomically, in the format its suffix names."""
    fmt = Path(path).suffix.lstrip(".") or "png"
    write_atomic(path, lambda staging: fig.savefig(staging, format=fmt, **savefig_options))


def dump_json(data: Any, path: Path | str) -> None:
    write_text_atomic(json.dumps(data, indent=2, default=str) + "\n", path)


def setup_rule_logging(log_path: str | None) -> None:
    """Send the library's logging of one rule to its `log:` file (and stderr)."""
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w"))
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
        force=True,
    )
    logging.captureWarnings(True)


# The last line of every rule's log: the process's CPU seconds before the rule's work started
# (interpreter, Snakemake's script preamble, module imports) and during it. bench/run_split.py
# sums them over a run to split its time into start-up and real work.
CPU_LINE = "rule cpu: start_up_s={start_up:.3f} work_s={work:.3f}"


def run_rule(log_path: str | None, work) -> Any:
    """Run one rule's work with its logging set up; a failure is logged, then re-raised."""
    start_up = time.process_time()
    setup_rule_logging(log_path)
    try:
        result = work()
    except Exception:
        log.exception("rule failed")
        raise
    log.info(CPU_LINE.format(start_up=start_up, work=time.process_time() - start_up))
    return result
