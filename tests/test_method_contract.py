"""Every registered method (online and launch-time) against the contract checks of
tests/method_checks.py. The methods come from the registries, so a new method file is checked
without editing this file; the broken toy methods of tests/broken_methods/ show that each
check fails on the breach it is about."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import method_checks as checks
import numpy as np
import pytest

from stragglers.launch.methods import available_launch_methods, get_launch_method
from stragglers.methods import available_methods, check_method_params, get_method

BROKEN = Path(__file__).parent / "broken_methods"


def _takes_tmp_path(check) -> bool:
    return "tmp_path" in inspect.signature(check).parameters


@pytest.mark.parametrize("name", available_methods())
def test_params_declared(name):
    checks.check_params_declared(get_method(name))


@pytest.mark.parametrize("check", checks.ONLINE_CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", available_methods())
def test_online_contract(name, check, tmp_path):
    check(get_method(name), tmp_path)


@pytest.mark.parametrize("name", available_launch_methods())
def test_launch_params_declared(name):
    checks.check_launch_params_declared(get_launch_method(name))


@pytest.mark.parametrize("check", checks.LAUNCH_CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", available_launch_methods())
def test_launch_contract(name, check):
    check(get_launch_method(name))


# ---- the checks fail on methods that break the contract -----------------------------------


def _broken(module: str, class_name: str):
    """A toy method from tests/broken_methods/, imported without registering it."""
    spec = importlib.util.spec_from_file_location(
        f"broken_methods_{module}", BROKEN / f"{module}.py"
    )
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return getattr(loaded, class_name)


@pytest.mark.parametrize(
    "class_name,check,message",
    [
        ("TooManyFlags", checks.check_flags, r"shape \(\d+,\).*one flag per running task"),
        ("FloatFlags", checks.check_flags, "dtype float64"),
        ("PeeksAtLatency", checks.check_no_latency_peeking, "reads JobInfo.true_latency"),
        ("WritesIntoCheckpoint", checks.check_no_latency_peeking, "writes into a checkpoint"),
        ("Unseeded", checks.check_same_seed_same_flags, "flag different tasks"),
        ("CrashesOnOneFinished", checks.check_degenerate_checkpoints, "IndexError"),
        ("VagueError", checks.check_degenerate_checkpoints, "names neither the method nor the job"),
        ("BareDefaults", checks.check_params_declared, "bare value"),
        ("DefaultOutOfRange", checks.check_params_declared, "is not a number > 0"),
        ("UndocumentedParam", checks.check_params_declared, "'factor' has no one-line doc"),
    ],
)
def test_checks_catch_broken_methods(class_name, check, message, tmp_path):
    cls = _broken("online", class_name)
    args = (cls, tmp_path) if _takes_tmp_path(check) else (cls,)
    with pytest.raises(AssertionError, match=message):
        check(*args)


def test_a_correct_toy_method_passes_every_check(tmp_path):
    cls = _broken("online", "Correct")
    checks.check_params_declared(cls)
    for check in checks.ONLINE_CHECKS:
        check(cls, tmp_path)


@pytest.mark.parametrize(
    "class_name,check,message",
    [
        ("WrongLengthLaunch", checks.check_launch_predictions, r"expected bool \(80,\)"),
        ("UnseededLaunch", checks.check_launch_same_seed, "predict differently"),
        ("CrashesOnConstant", checks.check_launch_degenerate, "ZeroDivisionError on constant"),
    ],
)
def test_launch_checks_catch_broken_methods(class_name, check, message):
    with pytest.raises(AssertionError, match=message):
        check(_broken("launch", class_name))


# ---- the parameter check the workflow runs when it loads ----------------------------------


@pytest.mark.parametrize(
    "params,message",
    [
        ({"alfa": 0.5}, "method NURD: unknown parameter 'alfa'; known: alpha, epsilon"),
        ({"alpha": -1}, r"method NURD: parameter 'alpha' must be a number in \[0, 1\], got -1$"),
        ({"alpha": "x"}, r"parameter 'alpha' must be a number in \[0, 1\], got 'x' \(text\)"),
        ({"epsilon": 0}, r"parameter 'epsilon' must be a number > 0, got 0"),
        (
            {"regressor": "forest"},
            "must be one of 'protocol', 'xgboost', 'sklearn-gbr', got 'forest'",
        ),
        ({"n_estimators": 2.5}, "must be an integer >= 1, got 2.5"),
        ({"refit_every_checkpoint": 1}, "must be true or false, got 1"),
    ],
)
def test_bad_parameters_are_named_with_what_is_allowed(params, message):
    with pytest.raises(ValueError, match=message):
        check_method_params("NURD", params)
    with pytest.raises(ValueError, match=message):
        get_method("NURD")(params)  # the constructor runs the same check


@pytest.mark.parametrize(
    "name,old,new",
    [
        ("START", "max_history_jobs", "history_jobs"),
        ("START", "retrain_every", "refit_every"),
        ("START-MLE", "max_history_jobs", "history_jobs"),
        ("LASER", "earlier_jobs", "history_jobs"),
    ],
)
def test_old_parameter_names_name_the_new_one(name, old, new):
    with pytest.raises(
        ValueError, match=f"method {name}: parameter '{old}' was renamed to '{new}'"
    ):
        check_method_params(name, {old: 3})


def test_numbers_given_as_text_are_read_as_numbers():
    # Snakemake's --config passes nested values as text; YAML reads 1e-4 as text
    assert check_method_params("NURD", {"alpha": "0.3"})["alpha"] == 0.3
    assert check_method_params("SRQuant", {"theta_cost": "1e-4"})["theta_cost"] == 1e-4
    assert check_method_params("LSCP", {"lof_neighbors": ["3", "4"]})["lof_neighbors"] == [3, 4]
    assert check_method_params("PU-BG", {"max_samples": "balanced"})["max_samples"] == "balanced"
    assert check_method_params("Grabit", {"sigma": None})["sigma"] is None
    assert get_method("NURD")({"alpha": "0.3"}).params["alpha"] == 0.3


def test_launch_parameters_are_checked():
    from stragglers.launch.methods import check_launch_params

    with pytest.raises(
        ValueError,
        match=r"launch method Wrangler-node: parameter 'confidence' "
        r"must be a number in \[0, 1\], got 2",
    ):
        check_launch_params("Wrangler-node", {"confidence": 2})
    with pytest.raises(
        ValueError, match=r"launch method MTL-f0: parameter 'lam' must be a number > 0"
    ):
        get_launch_method("MTL-f0")({"lam": 0})


def test_the_registries_import_no_method_library():
    """Every method module imports its heavy library where it is used: listing the methods and
    checking their parameters (the workflow does, when it loads) imports none."""
    import subprocess
    import sys

    code = (
        "import sys; from stragglers.methods import available_methods, check_method_params;"
        "from stragglers.launch.methods import available_launch_methods, check_launch_params;"
        "[check_method_params(n, {}) for n in available_methods()];"
        "[check_launch_params(n, {}) for n in available_launch_methods()];"
        "assert 'stragglers.methods.nurd' in sys.modules;"  # the modules were imported
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'pyod', 'xgboost', 'sklearn', 'lifelines', 'pulearn', 'scipy', 'matplotlib')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[1],
    )
    assert out.stdout.strip() == "[]", out.stdout


def test_flags_of_the_contract_job_are_not_trivial():
    # the hand-made job is one where a sensible method flags something: the Oracle does
    features, latency, start = checks.small_job()
    cls = get_method("Oracle")
    flags = checks.run_job(cls({}), features, latency, start, checks.job_info(cls, latency))
    assert sum(int(np.sum(f)) for f in flags) > 0
