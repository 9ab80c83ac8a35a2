"""The workflow checks every method's parameters when it loads (`snakemake -n`), before any
job: an unknown or renamed parameter, a wrong type or a value out of range stops it with a
message naming the method, the parameter and what is allowed."""

import subprocess
import sys

import pytest
import yaml
from workflow_runs import ROOT

from stragglers.rules.launch import launch_settings


def dry_run(tmp_path, *extra):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--snakefile",
            str(ROOT / "Snakefile"),
            "--directory",
            str(tmp_path),
            "--quiet",
            "rules",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


DEFAULT = ("--configfile", str(ROOT / "config" / "config.yaml"))


@pytest.mark.parametrize(
    "methods,message",
    [
        ("{NURD: {alfa: 0.5}}", "method NURD: unknown parameter 'alfa'; known: alpha, epsilon"),
        (
            "{NURD: {alpha: -1}}",
            r"method NURD: parameter 'alpha' must be a number in [0, 1], got -1",
        ),
        (
            '{NURD: {alpha: "x"}}',
            "method NURD: parameter 'alpha' must be a number in [0, 1], got 'x'",
        ),
        (
            "{START: {max_history_jobs: 20}}",
            "method START: parameter 'max_history_jobs' was renamed to 'history_jobs'",
        ),
    ],
)
def test_dry_run_stops_on_a_bad_parameter(tmp_path, methods, message):
    dry = dry_run(tmp_path, *DEFAULT, "--config", f"methods={methods}")
    assert dry.returncode != 0
    assert message in dry.stdout, dry.stdout[-2000:]
    assert "Building DAG of jobs" not in dry.stdout  # stopped while loading, before any job


def test_dry_run_accepts_numbers_given_on_the_command_line(tmp_path):
    dry = dry_run(tmp_path, *DEFAULT, "--config", "methods={NURD: {alpha: 0.3, epsilon: 0.1}}")
    assert dry.returncode == 0, dry.stdout[-2000:]


def test_old_launch_setting_names_are_rejected(tmp_path):
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["launch"]["max_train_jobs"] = config["launch"].pop("history_jobs")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    dry = dry_run(
        tmp_path, "--configfile", str(tmp_path / "config.yaml"), "--replace-workflow-config"
    )
    assert dry.returncode != 0
    assert "config launch: setting 'max_train_jobs' was renamed to 'history_jobs'" in dry.stdout
    with pytest.raises(ValueError, match="'retrain_every' was renamed to 'refit_every'"):
        launch_settings({"retrain_every": 3}, "google-2011", 0.9)


def test_dry_run_stops_on_a_bad_dataset_setting_naming_it(tmp_path):
    """A config dataset's setting is checked by the schema, a placed one (`sensitivity.place`,
    which the schema leaves open) by its DatasetSpec: either stops the load, naming the
    dataset and the setting."""
    dry = dry_run(
        tmp_path,
        *DEFAULT,
        "--config",
        "datasets={google-synthetic: {kind: google-2019, source: generate, n_shards: 1}}",
    )
    assert dry.returncode != 0
    assert "On instance['datasets']['google-synthetic']['kind']" in dry.stdout, dry.stdout[-2000:]
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["sensitivity"]["place"] = {
        "real": {"kind": "google-2011-events", "source": "local", "raw_dir": str(tmp_path)}
        | {"n_shards": 1, "min_tasks": "many"}
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    dry = dry_run(
        tmp_path, "--configfile", str(tmp_path / "config.yaml"), "--replace-workflow-config"
    )
    assert dry.returncode != 0
    assert "config sensitivity.place.real.min_tasks: must be an integer >= 2" in dry.stdout, (
        dry.stdout[-2000:]
    )
    assert "Building DAG of jobs" not in dry.stdout
