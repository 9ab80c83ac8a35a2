"""The replay protocols as sets of named rules: a protocol (`replay.protocol`: causal,
reference, paper) is a preset of the rules (timeline, scaling, features, initial finished set,
threshold, regressor, and the outlier detectors' own), and `replay.overrides` flips any of
them, so the road from the paper's experiment to our causal default can be walked one rule at
a time (the reproduction audit, stragglers/report/audit.py). Every rule and its values:
docs/protocols.md.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

RULE_CHOICES: dict[str, tuple[Any, ...]] = {
    "timeline": ("aligned", "wallclock"),
    "prune_scored": (True, False),
    "scaling": ("final", "visible"),
    "features": ("divided_by_final", "mean_so_far"),
    "initial_finished": ("shortest", "first_to_finish"),
    "threshold": ("sorted_index", "quantile"),
    "regressor": ("sklearn_gbr", "xgboost"),
    "outlier_scaling": ("as_given", "zscore"),
    "outlier_small_train": ("abstain", "shrink"),
    "outlier_batch": ("running_only", "with_training"),
    "outlier_seed": ("fixed", "per_checkpoint"),
    "abod_object": ("reused", "fresh"),
    "xgbod": ("script", "compact"),
    "outlier_refit": ("every_checkpoint", "growth"),
    "outlier_constant_columns": ("keep", "drop"),
}


@dataclass(frozen=True)
class ProtocolRules:
    """A value of every rule of RULE_CHOICES. The replay reads them, and hands them to a method
    in `JobInfo.rules`; the method reads those it declares in `Method.protocol_rules`
    (stragglers/methods/base.py). The defaults are our own choices."""

    timeline: str
    prune_scored: bool
    scaling: str
    features: str
    initial_finished: str
    threshold: str
    regressor: str = "xgboost"
    outlier_scaling: str = "zscore"
    outlier_small_train: str = "shrink"
    outlier_batch: str = "with_training"
    outlier_seed: str = "per_checkpoint"
    abod_object: str = "fresh"
    xgbod: str = "compact"
    outlier_refit: str = "growth"
    outlier_constant_columns: str = "drop"


# the authors' run_od.py, detector by detector (docs/protocols.md)
SCRIPT_OUTLIER_RULES = {
    "outlier_scaling": "as_given",
    "outlier_small_train": "abstain",
    "outlier_batch": "running_only",
    "outlier_seed": "fixed",
    "abod_object": "reused",
    "xgbod": "script",
    "outlier_refit": "every_checkpoint",
    "outlier_constant_columns": "keep",
}

PRESETS: dict[str, ProtocolRules] = {
    "causal": ProtocolRules(
        "wallclock", False, "visible", "mean_so_far", "first_to_finish", "quantile", "xgboost"
    ),
    # the three future-using choices of the reference code, on the trace's clock
    "reference": ProtocolRules(
        "wallclock", True, "final", "divided_by_final", "first_to_finish", "sorted_index", "xgboost"
    ),
    # the reference script's experiment (docs/protocols.md)
    "paper": ProtocolRules(
        "aligned",
        True,
        "final",
        "divided_by_final",
        "shortest",
        "sorted_index",
        "sklearn_gbr",
        **SCRIPT_OUTLIER_RULES,
    ),
}
PROTOCOLS = tuple(PRESETS)
# our own choice of every rule: a JobInfo's rules when the caller hands none
OUR_RULES = PRESETS["causal"]


def resolve_rules(protocol: str, overrides: dict[str, Any] | None = None) -> ProtocolRules:
    """The preset of `protocol` with `overrides` applied; errors name the setting."""
    if protocol not in PRESETS:
        raise ValueError(f"replay.protocol must be one of {PROTOCOLS}, got {protocol!r}")
    values = {f.name: getattr(PRESETS[protocol], f.name) for f in fields(ProtocolRules)}
    for name, value in (overrides or {}).items():
        if name not in RULE_CHOICES:
            raise ValueError(
                f"replay.overrides.{name}: unknown override; known: {sorted(RULE_CHOICES)}"
            )
        if value not in RULE_CHOICES[name] or type(value) is not type(RULE_CHOICES[name][0]):
            raise ValueError(
                f"replay.overrides.{name} must be one of {list(RULE_CHOICES[name])}, got {value!r}"
            )
        values[name] = value
    rules = ProtocolRules(**values)
    if rules.initial_finished == "shortest" and rules.timeline != "aligned":
        # on the trace's clock the shortest tasks may not even have started yet
        raise ValueError(
            "replay.overrides.initial_finished: 'shortest' needs timeline 'aligned' "
            f"(protocol {protocol!r} resolves to timeline {rules.timeline!r})"
        )
    return rules
