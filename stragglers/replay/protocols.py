"""The replay protocols as sets of named rules (docs/protocols.md).

A protocol (`replay.protocol`) is a preset of seven rules; `replay.overrides` flips any of
them, so the road from the paper's experiment to our causal default can be walked one rule at
a time (the reproduction audit, stragglers/report/audit.py):

- `timeline`: `aligned` (every task starts at 0, checkpoint k = each task's k-th usage window;
  the reference script) or `wallclock` (the trace's clock, checkpoints on its grid).
- `prune_scored`: drop tasks from the scored set by their final window count (reference).
- `scaling`: `final` (features and latency min-max scaled per job with all tasks' final values,
  constant columns dropped) or `visible` (features as observed; methods scale with the data
  visible at the checkpoint).
- `features`: `divided_by_final` (cumulative sum of duration x value / the task's final
  duration) or `mean_so_far` (duration-weighted mean of the windows seen so far).
- `initial_finished`: `shortest` (the tasks below the sorted latency at index
  int(start_fraction * n) are known finished from the start) or `first_to_finish` (prediction
  starts once start_fraction of the tasks have finished).
- `threshold`: `sorted_index` (tau = sorted latencies at index int(q * n)) or `quantile`
  (np.quantile, linear).
- `regressor`: the latency regressor of NURD, NURD-NC and GBTR unless their `regressor`
  parameter names one: `sklearn_gbr` (the reference script's scikit-learn
  GradientBoostingRegressor, its defaults, random_state 42, fed the script's column order) or
  `xgboost` (the pipeline's boosted trees, stragglers.methods.nurd.BoostedLatencyModel).
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
}


@dataclass(frozen=True)
class ProtocolRules:
    timeline: str
    prune_scored: bool
    scaling: str
    features: str
    initial_finished: str
    threshold: str
    regressor: str = "xgboost"


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
        "aligned", True, "final", "divided_by_final", "shortest", "sorted_index", "sklearn_gbr"
    ),
}
PROTOCOLS = tuple(PRESETS)


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
