"""A method class's declarations are inherited: its parameters (`defaults`) and the protocol
rules it reads (`protocol_rules`) are its base's plus what it declares itself, and a
declaration that cannot apply fails when the class is defined."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
import pytest

from stragglers.formats.protocols import PRESETS
from stragglers.methods import get_method
from stragglers.methods.base import NOT_TAKEN, JobInfo, Method, Param


class _Base(Method):
    family: ClassVar[str] = "Test"
    defaults = {
        "alpha": Param(0.5, float, ge=0, le=1, doc="a share"),
        "rounds": Param(10, int, ge=1, doc="rounds"),
    }
    protocol_rules = ("outlier_scaling",)

    def predict(self, checkpoint):
        return np.zeros(len(checkpoint.running_tasks), dtype=bool)


class _Child(_Base):
    name = "Child"
    defaults = {"rounds": 20, "depth": Param(3, int, ge=1, doc="depth")}
    protocol_rules = ("outlier_seed",)


def _job(**rules) -> JobInfo:
    return JobInfo("j", 3, ("x",), 1.0, 0, rules=dataclasses.replace(PRESETS["causal"], **rules))


def test_a_subclass_inherits_its_bases_parameters_and_changes_only_what_it_declares():
    assert list(_Child.defaults) == ["alpha", "rounds", "depth"]
    assert _Child.defaults["alpha"] is _Base.defaults["alpha"]
    # a bare value over an inherited Param is a new default with the Param's type and range
    assert _Child.defaults["rounds"] == dataclasses.replace(_Base.defaults["rounds"], default=20)
    assert _Child({}).params == {"alpha": 0.5, "rounds": 20, "depth": 3}
    assert _Child({"alpha": 0.25}).params["alpha"] == 0.25
    with pytest.raises(ValueError, match="parameter 'rounds' must be an integer >= 1"):
        _Child({"rounds": 0})
    with pytest.raises(ValueError, match="unknown parameter 'beta'; known: alpha, depth, rounds"):
        _Child({"beta": 1})
    # the base is unchanged
    assert list(_Base.defaults) == ["alpha", "rounds"] and _Base.defaults["rounds"].default == 10


def test_the_methods_inherit_what_they_do_not_declare():
    # KNN declares its neighbours and its refit default; contamination is the detectors' own
    knn = get_method("KNN").defaults
    assert knn["contamination"] is get_method("LOF").defaults["contamination"]
    assert knn["refit_growth"].default == 0.1 and knn["refit_growth"].ge == 0
    # GBTR takes NURD's parameters but those of its weighting
    assert set(get_method("NURD").defaults) - set(get_method("GBTR").defaults) == {
        "alpha",
        "epsilon",
        "propensity_l2",
    }
    with pytest.raises(ValueError, match="method GBTR: unknown parameter 'alpha'"):
        get_method("GBTR")({"alpha": 0.5})


@pytest.mark.parametrize(
    "declared,message",
    [
        ({"alpha": 2.0}, r"class Bad: the default of 'alpha' must be a number in \[0, 1\]"),
        ({"rounds": Param(10, int, ge=1, doc="rounds")}, "'rounds' repeats its base's"),
        ({"gamma": NOT_TAKEN}, "NOT_TAKEN 'gamma' is no parameter of its base"),
    ],
)
def test_a_parameter_declaration_that_cannot_apply_fails_when_the_class_is_defined(
    declared, message
):
    with pytest.raises(TypeError, match=message):
        type("Bad", (_Base,), {"defaults": declared})


def test_a_method_reads_the_protocol_rules_it_declares_and_only_those():
    assert _Child.protocol_rules == ("outlier_scaling", "outlier_seed")
    method = _Child({})
    method.start_job(_job(outlier_scaling="as_given", outlier_seed="fixed"))
    assert (method.rules.outlier_scaling, method.rules.outlier_seed) == ("as_given", "fixed")
    with pytest.raises(AttributeError, match="method Child reads protocol rule 'xgbod', which"):
        _ = method.rules.xgbod
    # without rules from the replay, a job carries our own choices
    method.start_job(JobInfo("j", 3, ("x",), 1.0, 0))
    assert method.rules.outlier_scaling == PRESETS["causal"].outlier_scaling == "zscore"


@pytest.mark.parametrize(
    "declared,message",
    [
        (("outlier_scalling",), "protocol_rules names 'outlier_scalling', which is no protocol"),
        (("outlier_scaling",), "protocol rule 'outlier_scaling' is its base's already"),
    ],
)
def test_a_detector_declaring_an_unknown_protocol_rule_fails_clearly(declared, message):
    with pytest.raises(TypeError, match=message):
        type("Bad", (_Base,), {"protocol_rules": declared})
