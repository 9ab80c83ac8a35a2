"""Test-suite ordering for parallel runs (`pytest` runs `-n auto --maxschedchunk 1`,
pyproject.toml; `auto` is one worker more than CPUs, below), and the SLURM client config of
the tests (below).

pytest-xdist hands each worker two tests at a time, in collection order. A long test collected
late would keep one worker busy after the other has finished, and two long tests handed to one
worker together would run one after the other. So the long tests (`e2e`: whole Snakemake runs;
`slow`: a minute or more) go first, the longest first, each followed by a short one: every long
test starts on whichever worker is free next. The order of the others is unchanged.
"""

import os

import pytest


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than CPUs. The longest tests (the SLURM and cluster runs)
    spend most of their time waiting for job status polls, so a spare worker keeps the CPUs
    busy with the short tests meanwhile."""
    return (os.cpu_count() or 1) + 1


# Known longest first (wall time on 2 cores, docs/cost.md): only the order depends on this.
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
