"""CoxPH (Cox, 1972) with lifelines: proportional hazards on task features.

Finished tasks are events at their latency; running tasks are right-censored at their elapsed
time (or at the largest finished latency, censoring="max_finished"). lifelines'
`CoxPHFitter` (Breslow baseline, ridge `penalizer` so the fit converges with collinear or
near-constant features) gives the coefficients beta and the baseline cumulative hazard H0, so
that H(t | x) = H0(t) * exp((x - mean) . beta).

Decision rule (decision="conditional_survival", default): a running task with elapsed time e
is flagged when P(T >= tau | T > e, x) = exp(-(H(tau | x) - H(e | x))) >= survival_threshold
(0.5): given that it has run for e seconds it is at least as likely as not to reach tau.
decision="median" flags when the unconditional survival S(tau | x) >= 0.5 (predicted median
latency >= tau).

The Breslow H0 is a step function that stays flat after the last observed event, i.e. no
task would ever finish after the latest latency seen so far; early in a job tau lies beyond
every finished latency, and every running task would survive to tau. With
baseline_tail="weibull" (default) H0 is extended past the last event time t_last with a
Weibull tail H0(t) = H0(t_last) (t / t_last)^k, k the least-squares slope of log H0 against
log t over the event times (clipped to [0.1, 20]); baseline_tail="flat" keeps lifelines' H0.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from stragglers.methods._censored import (
    CENSORED_FAMILY,
    CENSORING_MODES,
    censoring_points,
    check_choice,
    observed_time,
)
from stragglers.methods._features import Standardizer, fit_standardizer
from stragglers.methods._online import OnlineRefitMethod
from stragglers.methods.base import Checkpoint, Param

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    from stragglers.methods._cox_breslow import CoxBreslowFit

COX_DECISIONS = ("conditional_survival", "median")
BASELINE_TAILS = ("weibull", "flat")
WEIBULL_SHAPE_RANGE = (0.1, 20.0)
# a refit that fails to converge is retried once with the penalizer multiplied by this
RETRY_PENALIZER_FACTOR = 10.0


@dataclass(frozen=True)
class BaselineHazard:
    """Baseline cumulative hazard H0(t): lifelines' step function plus an optional tail."""

    times: np.ndarray  # increasing, seconds
    cumulative: np.ndarray  # H0 at `times`
    last_event: float  # seconds
    tail_shape: float | None  # Weibull shape beyond last_event, None = flat

    def __call__(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        idx = np.searchsorted(self.times, t, side="right") - 1
        h = np.where(idx >= 0, self.cumulative[np.clip(idx, 0, None)], 0.0)
        if self.tail_shape is not None and self.last_event > 0:
            h_last = self.cumulative[np.searchsorted(self.times, self.last_event, side="right") - 1]
            beyond = t > self.last_event
            h = np.where(
                beyond,
                h_last * (np.maximum(t, self.last_event) / self.last_event) ** self.tail_shape,
                h,
            )
        return h


def weibull_tail_shape(event_times: np.ndarray, cumulative_at_events: np.ndarray) -> float:
    """Slope of log H0 against log t over event times (1 = exponential if undetermined)."""
    keep = (event_times > 0) & (cumulative_at_events > 0)
    log_t = np.log(event_times[keep])
    log_h = np.log(cumulative_at_events[keep])
    if len(log_t) < 2 or np.ptp(log_t) <= 0:
        return 1.0
    slope = np.polyfit(log_t, log_h, 1)[0]
    return float(np.clip(slope, *WEIBULL_SHAPE_RANGE))


def baseline_from_lifelines(
    frame: pd.DataFrame, event_times: np.ndarray, tail: str
) -> BaselineHazard:
    """H0 from lifelines' `baseline_cumulative_hazard_` frame, with the configured tail."""
    times = frame.index.to_numpy(dtype=np.float64)
    cumulative = frame.iloc[:, 0].to_numpy(dtype=np.float64)
    last_event = float(np.max(event_times))
    shape = None
    if tail == "weibull":
        unique_events = np.unique(event_times)
        at_events = cumulative[np.searchsorted(times, unique_events, side="right") - 1]
        shape = weibull_tail_shape(unique_events, at_events)
    return BaselineHazard(
        times=times, cumulative=cumulative, last_event=last_event, tail_shape=shape
    )


@dataclass(frozen=True)
class CoxFit:
    scaler: Standardizer
    columns: np.ndarray
    coef: np.ndarray  # beta on the z-scored columns used
    offset: float  # log partial hazard at z = 0 (lifelines centres covariates at their mean)
    baseline: BaselineHazard


class CoxPH(OnlineRefitMethod):
    name: ClassVar[str] = "CoxPH"
    family: ClassVar[str] = CENSORED_FAMILY
    # lifelines' fit without what CoxPH does not read (imported where used)
    lazy_modules: ClassVar[tuple[str, ...]] = ("stragglers.methods._cox_breslow",)
    defaults: ClassVar[dict[str, Any]] = {
        "censoring": Param(
            "elapsed",
            str,
            choices=CENSORING_MODES,
            doc="a running task's censoring point: its elapsed time, or the longest finished latency",
        ),  # or "max_finished" (the paper's code for Tobit/Grabit)
        "penalizer": Param(0.1, float, ge=0, doc="ridge penalty of lifelines' Cox fit"),
        "decision": Param(
            "conditional_survival",
            str,
            choices=COX_DECISIONS,
            doc="flag on the conditional survival past tau, or on the predicted median latency",
        ),  # or "median"
        "survival_threshold": Param(
            0.5,
            float,
            gt=0,
            lt=1,
            doc="P(T >= tau | T > elapsed) at or above which a running task is flagged",
        ),
        "baseline_tail": Param(
            "weibull",
            str,
            choices=BASELINE_TAILS,
            doc="baseline hazard beyond the last finished latency: a Weibull tail, or flat",
        ),  # or "flat" (lifelines' Breslow step function as is)
        "refit_growth": 0.25,
    }

    def __init__(self, params: dict[str, Any] | None = None, seed: int = 0):
        super().__init__(params, seed)
        check_choice(self.name, "censoring", self.params["censoring"], CENSORING_MODES)
        check_choice(self.name, "decision", self.params["decision"], COX_DECISIONS)
        check_choice(self.name, "baseline_tail", self.params["baseline_tail"], BASELINE_TAILS)
        if not float(self.params["penalizer"]) >= 0:
            raise ValueError(f"method {self.name}: penalizer must be >= 0")

    def information(self, checkpoint: Checkpoint) -> float:
        return observed_time(checkpoint, self.params["censoring"])

    def _fit(self, checkpoint: Checkpoint) -> CoxFit | None:
        if len(checkpoint.finished_tasks) < 1:
            return None
        scaler = fit_standardizer(checkpoint.finished_features, checkpoint.running_features)
        columns = scaler.varying.copy()
        Z = np.vstack(
            [
                scaler.transform(checkpoint.finished_features),
                scaler.transform(checkpoint.running_features),
            ]
        )[:, columns]
        finished = np.asarray(checkpoint.finished_latency, dtype=np.float64)
        durations = np.r_[finished, censoring_points(checkpoint, self.params["censoring"])]
        # lifelines needs positive durations; a task that just started has elapsed ~ 0
        floor = 1e-6 * max(float(self.job.straggler_threshold), 1e-12)
        durations = np.maximum(durations, floor)
        events = np.r_[
            np.ones(len(finished), dtype=int), np.zeros(len(Z) - len(finished), dtype=int)
        ]
        frame = pd.DataFrame(Z, columns=[f"x{i}" for i in range(Z.shape[1])])
        frame["duration"] = durations
        frame["event"] = events
        fitter = self._fit_lifelines(frame, checkpoint)
        coef = fitter.params.to_numpy(dtype=np.float64) if Z.shape[1] else np.zeros(0)
        offset = fitter.log_partial_hazard_at_origin() if Z.shape[1] else 0.0
        baseline = baseline_from_lifelines(
            fitter.baseline_cumulative_hazard,
            durations[: len(finished)],
            self.params["baseline_tail"],
        )
        return CoxFit(scaler=scaler, columns=columns, coef=coef, offset=offset, baseline=baseline)

    def _fit_lifelines(self, frame: pd.DataFrame, checkpoint: Checkpoint) -> CoxBreslowFit:
        """lifelines' CoxPHFitter(penalizer).fit's model (`_cox_breslow`), retried once with a
        larger penalizer when it does not converge."""
        from lifelines.exceptions import ConvergenceError

        from stragglers.methods._cox_breslow import fit_cox_breslow

        penalizer = float(self.params["penalizer"])
        attempts = [penalizer, max(penalizer, 0.01) * RETRY_PENALIZER_FACTOR]
        last_error: Exception | None = None
        for attempt in attempts:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # lifelines warns on near-separation
                    return fit_cox_breslow(frame, attempt, "duration", "event")
            except ConvergenceError as err:
                last_error = err
        raise RuntimeError(
            f"CoxPH: lifelines did not converge for job {self.job.job_id} at checkpoint "
            f"{checkpoint.index} (t={checkpoint.time}) with penalizer {attempts[0]} nor "
            f"{attempts[1]}: {last_error}"
        ) from last_error

    def _flag(self, state: CoxFit, checkpoint: Checkpoint) -> np.ndarray:
        Z = state.scaler.transform(checkpoint.running_features)[:, state.columns]
        risk = np.exp(Z @ state.coef + state.offset) if len(state.coef) else np.ones(len(Z))
        tau = float(self.job.straggler_threshold)
        h_tau = state.baseline(np.array([tau]))[0]
        threshold = float(self.params["survival_threshold"])
        if self.params["decision"] == "median":
            return np.exp(-risk * h_tau) >= threshold
        elapsed = np.asarray(checkpoint.running_elapsed, dtype=np.float64)
        h_elapsed = state.baseline(elapsed)
        conditional = np.exp(-risk * np.maximum(h_tau - h_elapsed, 0.0))
        return (elapsed >= tau) | (conditional >= threshold)
