#!/usr/bin/env python3
"""cluster-generic cancel command: stop jobs of submit.py (their whole process group).

Usage: cancel.py STATE_DIR JOB_ID...
"""

import os
import signal
import sys
from pathlib import Path

if __name__ == "__main__":
    state_dir = Path(sys.argv[1]).resolve()
    for job_id in sys.argv[2:]:
        try:
            os.killpg(int((state_dir / job_id / "pid").read_text()), signal.SIGTERM)
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass  # already gone
