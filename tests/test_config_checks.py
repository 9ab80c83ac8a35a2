"""The load-time checks of the config (stragglers/rules/config.py: check_config, which
workflow/rules/common.smk calls): each bad setting stops with a message naming it, without
Snakemake (tests/test_config_params.py runs the same through `snakemake -n`)."""

from __future__ import annotations

import copy
import re

import pytest
import yaml
from snakemake.utils import validate
from workflow_runs import ROOT

from stragglers.rules.config import check_config

DEFAULT = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def changed(**sections):
    """The default config with `sections` replaced, validated and filled in with the schema's
    defaults as the Snakefile does before common.smk runs the checks."""
    config = copy.deepcopy(DEFAULT)
    config.update(sections)
    validate(config, str(ROOT / "workflow" / "schemas" / "config.schema.yaml"))
    return config


def test_the_default_config_passes():
    check_config(changed())


@pytest.mark.parametrize(
    "sections,message",
    [
        ({"methods": {"Nurd": {}}}, "config methods: unknown method(s) ['Nurd']; available: ["),
        (
            {"methods": {"NURD": {"alfa": 0.5}}},
            "method NURD: unknown parameter 'alfa'; known: alpha, epsilon",
        ),
        (
            {"methods": {"A": {"method": "NURD", "alpha": 2}}},
            "method NURD: parameter 'alpha' must be a number in [0, 1], got 2 (config methods.A)",
        ),
        (
            {"launch": {**DEFAULT["launch"], "methods": {"MTL-zz": {}}}},
            "config launch.methods: unknown launch method(s) ['MTL-zz']; available: [",
        ),
        (
            {"launch": {**DEFAULT["launch"], "datasets": ["nowhere"]}},
            "launch.datasets: ['nowhere'] are not datasets of the config",
        ),
        (
            {"audit": {"methods": {"x": {"method": "NURDD"}}}},
            "config audit.methods.x: unknown method 'NURDD'; available: [",
        ),
        (
            {"audit": {"methods": {"x": {"method": "NURD", "params": {"alfa": 1}}}}},
            "(config audit.methods.x)",
        ),
        (
            {"tuning": {"n_jobs": 2, "grids": {"NURD": {"alpha": [0.5, 7]}}}},
            "got 7 (config tuning.grids.NURD.alpha)",
        ),
        (
            {"methods": {"NURD": {}}, "tuning": {"n_jobs": 2, "grids": {"GBTR": {"loss": ["x"]}}}},
            "GBTR",
        ),
    ],
)
def test_a_bad_setting_is_named(sections, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        check_config(changed(**sections))


def test_a_grid_for_a_method_the_run_does_not_configure_is_named():
    config = changed(
        methods={"NURD": {}}, tuning={"n_jobs": 2, "grids": {"GBTR": {"n_estimators": [5]}}}
    )
    with pytest.raises(ValueError, match="config tuning.grids: GBTR is not among the configured"):
        check_config(config)


def test_renamed_launch_settings_and_missing_local_folders_are_named(tmp_path):
    launch = {**DEFAULT["launch"], "retrain_every": 2}
    with pytest.raises(ValueError, match="config launch: setting 'retrain_every' was renamed"):
        check_config(changed(launch=launch))
    local = {
        "kind": "google-2011",
        "source": "local",
        "raw_dir": str(tmp_path / "no"),
        "n_shards": 1,
    }
    datasets = {**DEFAULT["datasets"], "mine": local}
    with pytest.raises(ValueError, match=f"config datasets.mine.raw_dir: {tmp_path}/no does not"):
        check_config(changed(datasets=datasets))
    local["raw_dir"] = str(tmp_path)
    check_config(changed(datasets=datasets))


def test_sensitivity_and_calibration_sections_are_checked():
    sensitivity = {**DEFAULT["sensitivity"], "methods": ["NURD", "Nurd"]}
    with pytest.raises(ValueError, match=re.escape("config sensitivity.methods: ['Nurd'] are")):
        check_config(changed(sensitivity=sensitivity))
    calibration = {**DEFAULT["calibration"], "seeds": [101, DEFAULT["seed"]]}
    with pytest.raises(ValueError, match="the seed the fitted settings are judged on"):
        check_config(changed(calibration=calibration))
