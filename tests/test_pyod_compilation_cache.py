"""`cache_pyod_compilation` only changes where PyOD's numba code comes from: CBLOF's scores
are the same bytes with PyOD's own compilation, with the cache written, and with the cache
read back, each in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = """
import sys
import numpy as np
from pyod.models.cblof import CBLOF
if sys.argv[1] == "cached":
    from stragglers.methods._pyod_kernels import cache_pyod_compilation
    cache_pyod_compilation()
rng = np.random.default_rng(5)
train = rng.normal(size=(300, 4))
probe = np.vstack([train, rng.normal(size=(200, 4)) * 3.0])
detector = CBLOF(n_clusters=6, check_estimator=False, random_state=3).fit(train)
sys.stdout.write(np.asarray(detector.decision_function(probe)).tobytes().hex())
"""


def _scores(mode: str, cache_dir) -> str:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.mark.slow  # three fresh processes, two of them compiling PyOD's function
def test_cblof_scores_equal_with_and_without_the_compilation_cache(tmp_path):
    plain = _scores("plain", tmp_path)
    written = _scores("cached", tmp_path)
    assert any(tmp_path.rglob("*.nbi"))  # the cache was written
    read_back = _scores("cached", tmp_path)
    assert plain and plain == written == read_back
