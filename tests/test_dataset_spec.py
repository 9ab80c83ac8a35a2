"""A dataset's settings are read once into a DatasetSpec (stragglers/formats/dataset_spec.py),
and each default is stated once: the schema's defaults equal the package's constants, and the
literals appear nowhere else in stragglers/ and workflow/."""

from __future__ import annotations

import copy
import re

import pytest
import yaml
from snakemake.utils import validate
from workflow_runs import ROOT

from stragglers.formats.dataset_spec import (
    DEFAULT_SEED,
    LATENCY_DEFINITIONS,
    MAX_PRIORITY,
    MIN_TASKS,
    PRODUCTION_PRIORITIES,
    DatasetSpec,
    dataset_replay,
    dataset_specs,
)
from stragglers.rules.sensitivity import derived_datasets

SCHEMA_PATH = ROOT / "workflow" / "schemas" / "config.schema.yaml"
SCHEMA = yaml.safe_load(SCHEMA_PATH.read_text())
DATASET_SCHEMA = SCHEMA["properties"]["datasets"]["additionalProperties"]
DEFAULT = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def validated(config):
    config = copy.deepcopy(config)
    validate(config, str(SCHEMA_PATH))
    return config


def test_the_schema_states_the_package_defaults():
    properties = DATASET_SCHEMA["properties"]
    assert properties["min_tasks"]["default"] == MIN_TASKS
    assert properties["latency_definition"]["default"] == LATENCY_DEFINITIONS[0]
    assert properties["latency_definition"]["enum"] == list(LATENCY_DEFINITIONS)
    assert properties["production_priorities"]["items"]["maximum"] == MAX_PRIORITY
    assert (
        DEFAULT["seed"] == DEFAULT_SEED
    )  # the default config's seed, the one the fit is judged on


# each default's literal, and the one place it may be written (besides the schema's `default`
# keys, which test_the_schema_states_the_package_defaults compares)
LITERALS = {
    "the seed 20220301": (re.compile(r"\b20220301\b"), "DEFAULT_SEED = "),
    "the priorities 9, 10, 11": (
        re.compile(r"[(\[]\s*9\s*,\s*10\s*,\s*11\s*[)\]]"),
        "PRODUCTION_PRIORITIES = ",
    ),
    "min_tasks 100": (
        re.compile(r"min.tasks\W.*\b100\b|\b100\b.*\bmin.tasks", re.IGNORECASE),
        "MIN_TASKS = ",
    ),
}
SOURCES = [
    path
    for folder in ("stragglers", "workflow")
    for path in sorted((ROOT / folder).rglob("*"))
    if path.suffix in (".py", ".smk", ".yaml", ".json") and path.is_file()
] + [ROOT / "Snakefile"]


@pytest.mark.parametrize("name", sorted(LITERALS))
def test_each_default_is_stated_once(name):
    pattern, definition = LITERALS[name]
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in SOURCES
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if pattern.search(line)
    ]
    assert len(found) == 1 and definition in found[0], (
        f"{name} is written in more than its one place (stragglers/formats/dataset_spec.py): "
        f"{found}"
    )


def test_the_schema_states_min_tasks_default_once():
    """Only the datasets' `min_tasks` has a default in the schema (no restated copy)."""

    def defaults(node, path=()):
        if isinstance(node, dict):
            if path and path[-1] == "min_tasks" and "default" in node:
                yield path
            for key, value in node.items():
                yield from defaults(value, (*path, key))
        elif isinstance(node, list):
            for value in node:
                yield from defaults(value, path)

    assert len(list(defaults(SCHEMA))) == 1


def test_specs_of_the_default_config_match_the_entries():
    config = validated(DEFAULT)
    specs = dataset_specs(config)
    assert list(specs) == list(config["datasets"])
    for name, entry in config["datasets"].items():
        spec = specs[name]
        assert (spec.kind, spec.source, spec.n_shards) == (
            entry["kind"],
            entry["source"],
            entry["n_shards"],
        )
        assert spec.min_tasks == entry["min_tasks"] == MIN_TASKS
        assert spec.production_priorities == list(PRODUCTION_PRIORITIES)
        assert spec.latency_definition == entry["latency_definition"]
        assert spec.grid == entry.get("replay", {})
        assert spec.replay == dataset_replay(config["replay"], entry)
        assert spec.generator == entry.get("generator", {})
        assert spec.sha256sum == entry.get("sha256sum", "")


def test_the_spec_leaves_the_entry_as_given():
    """A calibration search's fingerprint includes the dataset's entry: filling in the spec's
    defaults must not add keys to it."""
    entry = {"kind": "alibaba-2018", "source": "generate", "n_shards": 1}
    spec = DatasetSpec.from_config("a", entry)
    assert entry == {"kind": "alibaba-2018", "source": "generate", "n_shards": 1}
    assert spec.min_tasks == MIN_TASKS and spec.production_priorities == [9, 10, 11]
    assert spec.latency_definition == "schedule_to_finish" and spec.replay == {}


def test_derived_datasets_get_specs_too():
    config = validated({**DEFAULT, "replicates": 2})
    derived = derived_datasets(config)
    specs = dataset_specs(config, derived)
    assert set(derived) <= set(specs)
    replicate = specs["google-synthetic@r2"]
    assert replicate.min_tasks == specs["google-synthetic"].min_tasks
    assert replicate.generator["seed"] != config["seed"]


@pytest.mark.parametrize(
    "setting,value,message",
    [
        ("kind", "google-2019", "config datasets.d.kind: unknown dataset kind 'google-2019'"),
        ("source", "ftp", "config datasets.d.source: must be one of"),
        ("n_shards", 0, "config datasets.d.n_shards: must be an integer >= 1, got 0"),
        ("min_tasks", "100", "config datasets.d.min_tasks: must be an integer >= 2, got '100'"),
        ("min_tasks", True, "config datasets.d.min_tasks: must be an integer >= 2, got True"),
        ("production_priorities", [12], "config datasets.d.production_priorities: must be"),
        ("production_priorities", 9, "config datasets.d.production_priorities: must be"),
        ("latency_definition", "sum", "config datasets.d.latency_definition: must be one of"),
        ("replay", [300], "config datasets.d.replay: must be a mapping"),
    ],
)
def test_a_bad_dataset_setting_is_named(setting, value, message):
    entry = {"kind": "google-2011", "source": "generate", "n_shards": 1, setting: value}
    with pytest.raises(ValueError, match=re.escape(message)):
        DatasetSpec.from_config("d", entry)


def test_a_missing_or_inconsistent_setting_is_named():
    with pytest.raises(ValueError, match=re.escape("config datasets.d: `n_shards` is required")):
        DatasetSpec.from_config("d", {"kind": "google-2011", "source": "generate"})
    with pytest.raises(ValueError, match=re.escape("config datasets.d.raw_dir: required")):
        DatasetSpec.from_config("d", {"kind": "google-2011", "source": "local", "n_shards": 1})
    with pytest.raises(ValueError, match="a tasks-table dataset is read from a local folder"):
        DatasetSpec.from_config("d", {"kind": "tasks-table", "source": "generate", "n_shards": 1})


def test_a_bad_placed_dataset_names_its_place_entry(tmp_path):
    """`sensitivity.place` entries are not checked by the schema; their spec names them."""
    config = validated(DEFAULT)
    place = {"kind": "google-2011-events", "source": "local", "raw_dir": str(tmp_path)}
    config["sensitivity"]["place"] = {"real": {**place, "n_shards": 1, "min_tasks": 1}}
    with pytest.raises(
        ValueError, match=re.escape("config sensitivity.place.real.min_tasks: must be an integer")
    ):
        dataset_specs(config, derived_datasets(config))
