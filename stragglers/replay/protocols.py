"""The replay protocols as sets of named rules (docs/protocols.md).

A protocol (`replay.protocol`) is a preset of fifteen rules; `replay.overrides` flips any of
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

The outlier detectors' rules (the fourteen PyOD baselines, stragglers/methods/_outlier.py),
each the authors' `code/run_od.py` way (`paper`) or ours (`causal`, `reference`):

- `outlier_scaling`: `as_given` (the features as the replay hands them: min-max scaled under
  `scaling: final`) or `zscore` (z-scored again with the rows visible at the checkpoint).
- `outlier_small_train`: `abstain` (the detectors' own parameters; a detector that raises at a
  checkpoint flags nothing there) or `shrink` (neighbour counts, LSCP's region and CBLOF's
  clusters shrunk to fit small training sets).
- `outlier_batch`: `running_only` (COF, SOD and SOS score the running tasks as a batch of their
  own, in the script's row order: stragglers first) or `with_training` (the running tasks
  scored together with the training rows).
- `outlier_seed`: `fixed` (random state 42, the script's `--rs` default) or `per_checkpoint`
  (a seed per job and checkpoint, derived from the config's seed).
- `abod_object`: `reused` (one PyOD ABOD object per job, refit at every fit: PyOD lowers its
  n_neighbors for good after a fit on too few rows) or `fresh` (a new object per fit).
- `xgbod`: `script` (PyOD's default list of 41 detectors and random state 0, labels
  latency > tau, fit on a single class too) or `compact` (the method's `tos_detectors`, labels latency >= tau, no fit until
  both classes have finished).
- `outlier_refit`: `every_checkpoint` (refit at every checkpoint, as the script) or `growth`
  (the detector's `refit_growth` schedule).
- `outlier_constant_columns`: `keep` (HBOS, MCD and PCA fit on every column) or `drop` (they
  drop the columns constant over the training rows).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from stragglers.methods.base import JobInfo

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
# the rules a method reads (handed to it in JobInfo); the others shape the replay
METHOD_RULES = (
    "regressor",
    "outlier_scaling",
    "outlier_small_train",
    "outlier_batch",
    "outlier_seed",
    "abod_object",
    "xgbod",
    "outlier_refit",
    "outlier_constant_columns",
)

# our own choice of each rule a method reads is the method's default (JobInfo), written once
_OURS = {f.name: f.default for f in fields(JobInfo) if f.name in METHOD_RULES}


@dataclass(frozen=True)
class ProtocolRules:
    timeline: str
    prune_scored: bool
    scaling: str
    features: str
    initial_finished: str
    threshold: str
    regressor: str = _OURS["regressor"]
    outlier_scaling: str = _OURS["outlier_scaling"]
    outlier_small_train: str = _OURS["outlier_small_train"]
    outlier_batch: str = _OURS["outlier_batch"]
    outlier_seed: str = _OURS["outlier_seed"]
    abod_object: str = _OURS["abod_object"]
    xgbod: str = _OURS["xgbod"]
    outlier_refit: str = _OURS["outlier_refit"]
    outlier_constant_columns: str = _OURS["outlier_constant_columns"]


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


def method_rules(rules: ProtocolRules) -> dict[str, str]:
    """The rules a method reads, as JobInfo fields."""
    return {name: getattr(rules, name) for name in METHOD_RULES}
