"""Test-suite ordering for parallel runs (`pytest` runs `-n auto --maxschedchunk 1`,
pyproject.toml; `auto` is one worker more than CPUs, below), the SLURM client config of
the tests, and the fixtures of the Snakemake runs (below; tests/workflow_runs.py, the configs
in tests/configs/).

pytest-xdist hands each worker two tests at a time, in collection order. A long test collected
late would keep one worker busy after the other has finished, and two long tests handed to one
worker together would run one after the other. So the long tests (`e2e`: whole Snakemake runs;
`slow`: a minute or more) go first, the longest first, each followed by a short one: every long
test starts on whichever worker is free next. The order of the others is unchanged.
"""

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import workflow_runs
from filelock import FileLock
from served_bucket import served_folder, write_google_bucket
from workflow_runs import ROOT, ReferenceRun, load_config, write_config, xdist_worker


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than CPUs. The longest tests (the SLURM and cluster runs)
    spend most of their time waiting for job status polls, so a spare worker keeps the CPUs
    busy with the short tests meanwhile."""
    return (os.cpu_count() or 1) + 1


# Known longest first (wall time on 2 cores, docs/cost.md): only the order depends on this.
# The three share the session's local reference run: test_workflow's worker starts it at once,
# while the other two run their executors side by side with it.
LONGEST_MODULES = ("test_slurm", "test_cluster_generic", "test_workflow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def long(item: pytest.Item) -> bool:
        return any(item.get_closest_marker(name) for name in ("e2e", "slow"))

    def rank(item: pytest.Item) -> int:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        return LONGEST_MODULES.index(module) if module in LONGEST_MODULES else len(LONGEST_MODULES)

    long_items = sorted((i for i in items if long(i)), key=rank)  # stable
    short_items = [i for i in items if not long(i)]
    interleaved = []
    for position, item in enumerate(long_items):
        interleaved.append(item)
        if position < len(short_items):
            interleaved.append(short_items[position])
    interleaved += short_items[len(long_items) :]
    items[:] = interleaved


# Snakemake imports every installed executor plugin at start-up, and the SLURM plugin's import
# runs `scontrol show config` (its MinJobAge probe). Where the SLURM client is installed and
# no controller answers (this machine between tests/test_slurm.py runs, CI after that test),
# scontrol retries for MessageTimeout - 1 = 9 s, and with no slurm.conf at all it looks for a
# configless controller for ~60 s: every `snakemake` a test starts paid that wait. The other
# tests do not use SLURM, so their client config names no reachable controller and fails at
# once; tests/test_slurm.py restores the machine's own for its run.
SLURM_CLIENT_CONF = "ClusterName=stragglers-tests\nSlurmctldHost=localhost\nMessageTimeout=1\n"


@pytest.fixture(scope="session", autouse=True)
def slurm_client_fails_fast(tmp_path_factory: pytest.TempPathFactory):
    # set even where scontrol is missing: tests/test_slurm.py installs SLURM mid-session (CI
    # on a fresh machine), and the tests after it would wait again
    conf = tmp_path_factory.mktemp("slurm-client") / "slurm.conf"
    conf.write_text(SLURM_CLIENT_CONF)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SLURM_CONF", str(conf))
        yield


# --- Snakemake runs (tests/workflow_runs.py; the configs are in tests/configs/) ---


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def shared_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every pytest-xdist worker of this session sees (one process: its own)."""
    if xdist_worker():
        return tmp_path_factory.getbasetemp().parent
    return tmp_path_factory.mktemp("shared")


@pytest.fixture(scope="session")
def tiny_bucket(shared_tmp: Path):
    """The Google bucket of the tiny config (tests/served_bucket.py), written once per
    session and served over HTTP by this worker: (folder, base URL)."""
    folder = shared_tmp / "tiny-bucket"
    with FileLock(str(shared_tmp / "tiny-bucket.lock")):
        if not (folder / "SHA256SUM").exists():  # written last
            write_google_bucket(folder, n_jobs=4)
    with served_folder(folder) as url:
        yield folder, url


@pytest.fixture(scope="session")
def tiny_config(tiny_bucket) -> Callable[[Path], Path]:
    """Writes tests/configs/tiny/config.yaml, filled in for this worker, to the given path."""
    bucket, url = tiny_bucket

    def write(path: Path) -> Path:
        return write_config(load_config("tiny", bucket=str(bucket), bucket_url=url), path)

    return write


@pytest.fixture(scope="session")
def run_snakemake() -> Callable[..., subprocess.CompletedProcess]:
    """run_snakemake(workdir, config, *args): `snakemake` on this repository's workflow."""
    return workflow_runs.run_snakemake


@pytest.fixture(scope="session")
def reference_run(shared_tmp: Path, tiny_bucket) -> Callable[[], ReferenceRun]:
    """The session's local run of the tiny config, run by whichever test asks first (call the
    fixture's value when the run is needed: an executor test starts its own run first)."""
    bucket, url = tiny_bucket
    return lambda: workflow_runs.reference_run(shared_tmp, bucket, url)
