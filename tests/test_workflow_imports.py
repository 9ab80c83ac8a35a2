"""Loading the workflow and building its DAG (`snakemake -n`) imports no method library and no
plotting library: every method module imports XGBoost, scikit-learn, PyOD, lifelines, torch,
SciPy or pulearn inside the function that uses it, and the figures import matplotlib where
they draw. Snakemake itself imports pandas, numpy and pyarrow; those are allowed."""

from __future__ import annotations

import subprocess
import sys

from workflow_runs import snakemake_command

LIBRARIES = ("xgboost", "sklearn", "pyod", "lifelines", "torch", "scipy", "pulearn", "matplotlib")

# snakemake's own entry point, in this process, then the top-level packages it left imported
DRY_RUN = """
import sys
from snakemake.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    if exit.code:
        raise
print("imported:", sorted({name.split(".")[0] for name in sys.modules}))
"""


def test_a_dry_run_imports_no_method_library(tmp_path, tiny_config):
    config = tiny_config(tmp_path / "config.yaml")
    command = snakemake_command(tmp_path, config, "-n", "--cores", "1")
    assert command[1:3] == ["-m", "snakemake"]
    run = subprocess.run(
        [sys.executable, "-c", DRY_RUN, *command[3:]], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "predict" in run.stdout and "launch_predict" in run.stdout  # the DAG was built
    imported = set(eval(run.stdout.rsplit("imported:", 1)[1]))  # noqa: S307 - our own print
    assert {"pandas", "numpy", "stragglers"} <= imported  # the check sees the imports
    assert not imported & set(LIBRARIES), sorted(imported & set(LIBRARIES))
