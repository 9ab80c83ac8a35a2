"""Test-suite ordering for parallel runs (`pytest` runs `-n auto`, pyproject.toml).

pytest-xdist hands tests to its workers in collection order, so a long end-to-end run collected
last would leave one worker busy long after the other finished. The `e2e` tests (whole Snakemake
runs) and the `slow` ones (a minute or more) therefore go first; the order of the others is
unchanged.
"""

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def long(item: pytest.Item) -> bool:
        return any(item.get_closest_marker(name) for name in ("e2e", "slow"))

    items.sort(key=lambda item: not long(item))  # stable: the others keep their order
