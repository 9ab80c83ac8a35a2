"""Contract checks every method must pass, in the spirit of scikit-learn's estimator checks
(`parametrize_with_checks`): tests/test_method_contract.py runs them on every method the
registries list (a new method file is checked without editing a test), and runs them on the
deliberately broken toy methods of tests/broken_methods/ to show that each check can fail.

Each check takes a method class and raises AssertionError saying what broke. Jobs and
checkpoints are made here by hand (small: the suite runs every method several times):

- `check_params_declared`: every parameter is a `Param` whose default it accepts, with a
  one-line `doc` (docs/methods.md's parameter tables are made from it).
- `check_flags`: one bool per running task at each checkpoint of a small job whose flagged
  tasks leave later checkpoints (as the replay's do); `resume_attempts` and
  `excluded_from_evaluation` are None or valid.
- `check_degenerate_checkpoints`: one finished task, constant features, NaN features and no
  running task give valid flags or a clear error (ValueError / RuntimeError naming the
  method or the job).
- `check_no_latency_peeking`: a method that is not privileged never touches
  `JobInfo.true_latency` (it is handed a poisoned object that fails on any use) and never
  writes into a checkpoint's arrays (they are read-only).
- `check_same_seed_same_flags`: two instances with one seed flag the same tasks.

Launch-time methods (fit / predict on rows of finished tasks): `check_launch_params_declared`,
`check_launch_predictions` (bool per row, also for no rows and for nodes and workloads not
seen in training), `check_launch_degenerate` (constant features, NaN features) and
`check_launch_same_seed`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from stragglers.methods import Checkpoint, JobInfo
from stragglers.methods.base import Param

# a progress-rate column first (LATE's and SRQuant's progress proxy reads cpu_rate)
FEATURES = ("cpu_rate", "canonical_memory_usage", "disk_io_time", "evictions_so_far")
JOB_ID = "contract-job"
N_TASKS = 40
ERRORS_OK = (ValueError, RuntimeError)
CHECKPOINT_INTERVAL = 60.0  # the grid step and kill delay handed to methods (seconds)


# ---------------------------------------------------------------------------------------------
# hand-made jobs and checkpoints


def small_job(n: int = N_TASKS, seed: int = 0):
    """Features (n, 4), latencies and starts: 10% stragglers whose first two features are
    high and whose latency is 3-5x a normal task's."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n, len(FEATURES)))
    features[:, 0] = np.abs(features[:, 0]) + 0.5  # a positive CPU rate
    slow = np.zeros(n, dtype=bool)
    slow[rng.choice(n, size=max(2, n // 10), replace=False)] = True
    features[slow, :2] += 3.0
    latency = np.where(slow, rng.uniform(300, 500, n), rng.uniform(50, 100, n))
    start = rng.uniform(0, 10, n)
    return features, latency, start


def job_info(cls, latency: np.ndarray, history=None, true_latency=None) -> JobInfo:
    tau = float(np.quantile(latency, 0.9))
    if true_latency is None and cls.privileged:
        true_latency = latency.copy()
    return JobInfo(
        job_id=JOB_ID,
        n_tasks=len(latency),
        feature_names=FEATURES,
        straggler_threshold=tau,
        seed=11,
        true_latency=true_latency,
        history=history,
        job_start=0.0,
        # the replay's grid and kill delay, as ReplaySettings hands them (SRQuant and LASER
        # need the kill delay, START the grid)
        checkpoint_interval=CHECKPOINT_INTERVAL,
        grid_origin=0.0,
        kill_delay=CHECKPOINT_INTERVAL,
    )


def _frozen(array) -> np.ndarray:
    array = np.array(array)
    array.flags.writeable = False
    return array


def checkpoint(
    features, latency, start, time, index, first, finished, running, read_only=False
) -> Checkpoint:
    wrap = _frozen if read_only else np.asarray
    return Checkpoint(
        time=float(time),
        index=int(index),
        first_prediction=bool(first),
        finished_tasks=wrap(finished.astype(np.int64)),
        finished_features=wrap(features[finished]),
        finished_latency=wrap(latency[finished]),
        running_tasks=wrap(running.astype(np.int64)),
        running_features=wrap(features[running]),
        running_elapsed=wrap(time - start[running]),
    )


def run_job(
    method, features, latency, start, info: JobInfo, n_checkpoints: int = 6, read_only: bool = False
) -> list[np.ndarray]:
    """Drive `method` through a job like the replay: checkpoints from the time 20% of the
    tasks had finished to the last end; flagged tasks leave later checkpoints. The flags."""
    end = start + latency
    first = np.sort(end)[len(end) // 5]
    times = np.linspace(first, end.max(), n_checkpoints + 1)[:-1]
    method.start_job(info)
    flagged = np.zeros(len(latency), dtype=bool)
    out = []
    for k, t in enumerate(times):
        finished = np.flatnonzero(end <= t)
        running = np.flatnonzero((start <= t) & (end > t) & ~flagged)
        cp = checkpoint(features, latency, start, t, k + 1, k == 0, finished, running, read_only)
        flags = method.predict(cp)
        _assert_flags(type(method), flags, len(running), f"checkpoint {k}")
        flagged[running[flags]] = True
        out.append(np.array(flags))
    return out


def _assert_flags(cls, flags, n_running: int, where: str) -> None:
    assert isinstance(flags, np.ndarray), (
        f"method {cls.name}: predict returned {type(flags).__name__} at {where}, not a numpy array"
    )
    assert flags.dtype == bool, (
        f"method {cls.name}: predict returned dtype {flags.dtype} at {where}, not bool"
    )
    assert flags.shape == (n_running,), (
        f"method {cls.name}: predict returned shape {flags.shape} at {where}, "
        f"expected ({n_running},): one flag per running task"
    )


def empty_history(folder: Path):
    """A JobHistory with no earlier job (cross-job methods then use their fallbacks)."""
    from stragglers.replay.history import JobHistory

    manifest = pd.DataFrame(
        {
            "job_id": pd.Series([], dtype=str),
            "path": pd.Series([], dtype=str),
            "job_start": pd.Series([], dtype=float),
            "job_end": pd.Series([], dtype=float),
        }
    )
    return JobHistory(manifest, folder, "google-2011")


def _history(cls, folder: Path):
    return empty_history(folder) if cls.cross_job else None


# ---------------------------------------------------------------------------------------------
# online methods


def check_params_declared(cls) -> None:
    """Every parameter a Param accepting its own default."""
    for key, spec in cls.defaults.items():
        assert isinstance(spec, Param), (
            f"method {cls.name}: parameter {key!r} is declared as a bare value {spec!r}; declare "
            f"Param(default, type, range) (stragglers.methods.base.Param)"
        )
        assert spec.accepts(spec.default), (
            f"method {cls.name}: the default of {key!r}, {spec.default!r}, is not {spec.allowed()}"
        )
        _check_doc(f"method {cls.name}", key, spec)
    cls({}, seed=0)  # the defaults pass the constructor's check


def _check_doc(what: str, key: str, spec: Param) -> None:
    assert spec.doc.strip() and "\n" not in spec.doc, (
        f"{what}: parameter {key!r} has no one-line doc (Param(..., doc=...)); "
        "docs/methods.md's parameter tables are made from it"
    )


def check_flags(cls, tmp_path: Path) -> None:
    features, latency, start = small_job()
    method = cls({}, seed=3)
    run_job(method, features, latency, start, job_info(cls, latency, _history(cls, tmp_path)))
    attempts = method.resume_attempts()
    assert attempts is None or (isinstance(attempts, (int, np.integer)) and attempts >= 1), (
        f"method {cls.name}: resume_attempts() returned {attempts!r}, not None or an int >= 1"
    )
    excluded = method.excluded_from_evaluation()
    if excluded is not None:
        excluded = np.asarray(excluded)
        assert excluded.dtype.kind in "iu" and np.all(
            (excluded >= 0) & (excluded < len(latency))
        ), f"method {cls.name}: excluded_from_evaluation() is not task positions: {excluded!r}"


def _single(cls, tmp_path, features, latency, start, finished, running, time) -> None:
    """One checkpoint: valid flags, or a clear error naming the method or the job."""
    method = cls({}, seed=3)
    try:
        method.start_job(job_info(cls, latency, _history(cls, tmp_path)))
        cp = checkpoint(features, latency, start, time, 1, True, finished, running)
        flags = method.predict(cp)
    except ERRORS_OK as error:
        assert cls.name in str(error) or JOB_ID in str(error), (
            f"method {cls.name}: an error that names neither the method nor the job: "
            f"{type(error).__name__}: {error}"
        )
        return
    except Exception as error:  # noqa: BLE001 - the check reports any other failure
        raise AssertionError(
            f"method {cls.name}: {type(error).__name__} instead of flags or a clear error: {error}"
        ) from error
    _assert_flags(cls, flags, len(running), "a degenerate checkpoint")


def _split(latency, start, time):
    end = start + latency
    return np.flatnonzero(end <= time), np.flatnonzero((start <= time) & (end > time))


def check_degenerate_checkpoints(cls, tmp_path: Path) -> None:
    features, latency, start = small_job()
    end = start + latency
    # one finished task
    time = float(np.sort(end)[0]) + 1e-6
    finished, running = _split(latency, start, time)
    finished = finished[:1]
    _single(cls, tmp_path, features, latency, start, finished, running, time)
    # constant features
    time = float(np.sort(end)[len(end) // 4])
    finished, running = _split(latency, start, time)
    _single(cls, tmp_path, np.ones_like(features), latency, start, finished, running, time)
    # NaN features (a missing window value, finished and running)
    nan = features.copy()
    nan[::3, 1] = np.nan
    _single(cls, tmp_path, nan, latency, start, finished, running, time)
    # no running task
    time = float(end.max()) + 1.0
    finished, running = _split(latency, start, time)
    _single(cls, tmp_path, features, latency, start, finished, running, time)


class PoisonedLatency:
    """Stands in for JobInfo.true_latency: any use fails the check."""

    def _fail(self, *args, **kwargs):
        raise AssertionError(
            "reads JobInfo.true_latency (running tasks' latencies) while not privileged"
        )

    __getitem__ = __array__ = __len__ = __iter__ = __float__ = __getattr__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __add__ = __sub__ = __mul__ = __truediv__ = _fail


def check_no_latency_peeking(cls, tmp_path: Path) -> None:
    if cls.privileged:
        return  # Oracle and Wrangler see true latencies by design (marked in every table)
    features, latency, start = small_job()
    info = job_info(cls, latency, _history(cls, tmp_path), true_latency=PoisonedLatency())
    try:
        run_job(cls({}, seed=3), features, latency, start, info, read_only=True)
    except AssertionError as error:
        raise AssertionError(f"method {cls.name}: {error}") from error
    except ValueError as error:
        if "read-only" in str(error):
            raise AssertionError(
                f"method {cls.name} writes into a checkpoint's arrays: {error}"
            ) from error
        raise


def check_same_seed_same_flags(cls, tmp_path: Path) -> None:
    features, latency, start = small_job(seed=1)
    runs = []
    for _ in range(2):
        runs.append(
            run_job(
                cls({}, seed=5),
                features,
                latency,
                start,
                job_info(cls, latency, _history(cls, tmp_path)),
            )
        )
    for k, (a, b) in enumerate(zip(*runs)):
        assert np.array_equal(a, b), (
            f"method {cls.name}: two runs with seed 5 flag different tasks at checkpoint {k}: "
            f"{np.flatnonzero(a).tolist()} vs {np.flatnonzero(b).tolist()}"
        )


ONLINE_CHECKS = [
    check_flags,
    check_degenerate_checkpoints,
    check_no_latency_peeking,
    check_same_seed_same_flags,
]


# ---------------------------------------------------------------------------------------------
# launch-time methods

LAUNCH_FEATURES = [
    "launch_machine_cpu_requested",
    "launch_machine_memory_requested",
    "launch_machine_running_tasks",
    "launch_machine_disk_io_time_sum",
]


def launch_rows(n: int = 80, seed: int = 0):
    """Standardised launch features, labels (both classes), nodes and workloads."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, len(LAUNCH_FEATURES)))
    node = np.array([f"m{i}" for i in rng.integers(0, 4, n)], dtype=object)
    workload = np.array([f"u{i}" for i in rng.integers(0, 3, n)], dtype=object)
    straggler = (X[:, 0] + 0.5 * rng.normal(size=n)) > 0.8
    straggler[:2] = [True, False]
    return X, straggler, node, workload


def _launch_model(cls, seed: int = 2):
    model = cls({}, seed=seed)
    model.feature_names = list(LAUNCH_FEATURES)
    return model


def _assert_launch(cls, predicted, n: int, where: str) -> None:
    assert (
        isinstance(predicted, np.ndarray) and predicted.dtype == bool and predicted.shape == (n,)
    ), (
        f"launch method {cls.name}: predict returned {type(predicted).__name__} "
        f"{getattr(predicted, 'dtype', '')} {getattr(predicted, 'shape', '')} for {where}, "
        f"expected bool ({n},)"
    )


def check_launch_params_declared(cls) -> None:
    for key, spec in cls.defaults.items():
        assert isinstance(spec, Param), (
            f"launch method {cls.name}: parameter {key!r} is a bare value {spec!r}, not a Param"
        )
        assert spec.accepts(spec.default), (
            f"launch method {cls.name}: the default of {key!r} is not {spec.allowed()}"
        )
        _check_doc(f"launch method {cls.name}", key, spec)
    cls({}, seed=0)


def check_launch_predictions(cls) -> None:
    X, straggler, node, workload = launch_rows()
    model = _launch_model(cls)
    model.fit(X, straggler, node, workload)
    _assert_launch(cls, model.predict(X, node, workload), len(X), "its training rows")
    _assert_launch(cls, model.predict(X[:0], node[:0], workload[:0]), 0, "no rows")
    unseen_node = np.array(["new-machine"] * 5, dtype=object)
    unseen_workload = np.array(["new-user"] * 5, dtype=object)
    _assert_launch(
        cls,
        model.predict(X[:5], unseen_node, unseen_workload),
        5,
        "a node and a workload not seen in training",
    )
    assert isinstance(model.describe(), dict)


def check_launch_degenerate(cls) -> None:
    X, straggler, node, workload = launch_rows()
    for label, rows in (
        ("constant features", np.zeros_like(X)),
        ("NaN features", np.where(np.arange(X.size).reshape(X.shape) % 7 == 0, np.nan, X)),
    ):
        model = _launch_model(cls)
        try:
            model.fit(rows, straggler, node, workload)
            predicted = model.predict(rows, node, workload)
        except ERRORS_OK as error:
            assert str(error), f"launch method {cls.name}: an error without a message on {label}"
            continue
        except Exception as error:  # noqa: BLE001
            raise AssertionError(
                f"launch method {cls.name}: {type(error).__name__} on {label}: {error}"
            ) from error
        _assert_launch(cls, predicted, len(rows), label)


def check_launch_same_seed(cls) -> None:
    X, straggler, node, workload = launch_rows(seed=3)
    predictions = []
    for _ in range(2):
        model = _launch_model(cls, seed=4)
        model.fit(X, straggler, node, workload)
        predictions.append(model.predict(X, node, workload))
    assert np.array_equal(*predictions), (
        f"launch method {cls.name}: two fits with seed 4 predict differently"
    )


LAUNCH_CHECKS = [check_launch_predictions, check_launch_degenerate, check_launch_same_seed]
