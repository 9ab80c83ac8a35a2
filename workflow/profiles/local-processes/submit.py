#!/usr/bin/env python3
"""cluster-generic submit command: start a Snakemake job script as its own local process.

Usage (Snakemake appends the job script): submit.py STATE_DIR JOBSCRIPT
Prints the job id (a folder under STATE_DIR) and returns at once, as sbatch/qsub do. The job
runs detached, in its own session, with nothing shared with the submitting Snakemake but the
file system; its exit code is written atomically to STATE_DIR/<id>/exit_code when it ends, and
its start/end times (epoch seconds) to started/ended, so the per-job start-up cost can be
measured (bench/job_overhead.py).
"""

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path


def main(state_dir: str, jobscript: str) -> None:
    job_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    folder = Path(state_dir).resolve() / job_id
    folder.mkdir(parents=True)
    # Snakemake may remove its temporary job script once submitted; keep our own copy.
    script = folder / "jobscript.sh"
    shutil.copyfile(jobscript, script)
    wrapper = (
        "date +%s.%N > started; "
        f'/bin/bash "{script}" > stdout 2> stderr; code=$?; '
        "date +%s.%N > ended; "
        "echo $code > exit_code.tmp && mv exit_code.tmp exit_code"
    )
    process = subprocess.Popen(
        ["/bin/bash", "-c", wrapper],
        cwd=folder,
        env={**os.environ, "SNAKEMAKE_LOCAL_JOB_DIR": str(folder)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a process group of its own: cancel.py kills the whole job
    )
    (folder / "pid").write_text(f"{process.pid}\n")
    print(job_id)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: submit.py STATE_DIR JOBSCRIPT")
    main(*sys.argv[1:])
