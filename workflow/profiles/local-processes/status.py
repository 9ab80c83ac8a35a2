#!/usr/bin/env python3
"""cluster-generic status command: print running, success or failed for a job of submit.py.

Usage: status.py STATE_DIR JOB_ID
"""

import os
import sys
from pathlib import Path


def status(folder: Path) -> str:
    exit_code = folder / "exit_code"
    if exit_code.exists():
        return "success" if exit_code.read_text().strip() == "0" else "failed"
    try:
        os.kill(int((folder / "pid").read_text()), 0)
    except (FileNotFoundError, ValueError):
        return "failed"  # never started: no pid written
    except ProcessLookupError:
        # gone: it may have finished between the two checks
        return (
            "success" if exit_code.exists() and exit_code.read_text().strip() == "0" else "failed"
        )
    return "running"


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: status.py STATE_DIR JOB_ID")
    print(status(Path(sys.argv[1]).resolve() / sys.argv[2].strip("'\"")))
