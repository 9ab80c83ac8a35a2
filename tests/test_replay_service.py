"""The replay-and-score service (stragglers/replay/service.py): every path that replays hands a
cross-job method the dataset's JobHistory, read with the machine state the method asks for."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from stragglers.convert.one_process import convert_google
from stragglers.formats.datasets import machine_state_columns
from stragglers.formats.jobs import read_manifest
from stragglers.methods import METHODS, load_method_dirs
from stragglers.replay import runner
from stragglers.replay.history import JobHistory
from stragglers.replay.service import (
    JobSelection,
    MethodRun,
    protocol_job_metrics,
    replay_methods,
    replay_settings,
)
from stragglers.traces.generate import GoogleGeneratorConfig, generate_google

HISTORY_METHODS = Path(__file__).parent / "history_methods"
KIND = "google-2011"


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    work = tmp_path_factory.mktemp("service")
    generate_google(work / "raw", GoogleGeneratorConfig.from_dict({"n_jobs": 4, "seed": 3}))
    convert_google(work / "raw", work / "converted", dataset="t", n_shards=2)
    return work / "converted"


@pytest.fixture
def history_seen():
    """The recording cross-job method, registered for the test only."""
    load_method_dirs([HISTORY_METHODS])
    method = METHODS.get("HistorySeen")
    method.seen.clear()
    yield method
    method.seen.clear()
    METHODS._external.pop("HistorySeen", None)


@pytest.fixture
def handed(monkeypatch):
    """What each replayed job was handed: (method name, history) per runner.replay_job call."""
    calls = []
    replay_job = runner.replay_job

    def spy(job, method, settings, last_columns, seed, history=None):
        calls.append((method.name, history))
        return replay_job(job, method, settings, last_columns, seed, history=history)

    monkeypatch.setattr(runner, "replay_job", spy)
    return calls


def run_path(path: str, converted: Path, tmp: Path) -> tuple[pd.DataFrame, bool]:
    """Run HistorySeen through one path; its job rows or metrics, and whether the path's
    timeline is the trace's clock (the paper's aligned one refuses cross-job methods)."""
    from stragglers.calibrate.trial import score_methods
    from stragglers.report.audit import run_variant
    from stragglers.rules.fingerprint import fingerprint_replay
    from stragglers.rules.predict import predict, tune_method

    manifest, name = converted / "manifest.parquet", "HistorySeen"
    if path == "predict":
        frame = predict(
            manifest=manifest,
            shard_jobs=[],
            tuned=[],
            tasks=tmp / "t.parquet",
            jobs=tmp / "j.parquet",
            dataset="t",
            method=name,
            shard="0",
            kind=KIND,
            method_name=name,
            method_params={},
            replay={},
            seed=1,
            method_dirs=[str(HISTORY_METHODS)],
        )
        return frame, True
    if path == "tune":
        result = tune_method(
            manifest=manifest,
            converted_jobs=[],
            tuning=tmp / "tuning.json",
            dataset="t",
            method=name,
            kind=KIND,
            method_name=name,
            method_params={},
            grid={"flag": [True, False]},
            replay={},
            seed=1,
            n_jobs=2,
            method_dirs=[str(HISTORY_METHODS)],
        )
        return with_status(pd.DataFrame(result["grid"])), True
    if path == "protocol causal":
        frame = protocol_job_metrics(
            converted_dir=converted,
            dataset="t",
            kind=KIND,
            methods={name: {}},
            replay={},
            protocol="causal",
            seed=1,
        )
        return frame, True
    if path == "fingerprint":
        frame = fingerprint_replay(
            manifest=str(manifest),
            converted_jobs=[],
            job_metrics=str(tmp / "fingerprint.csv"),
            dataset="t",
            fingerprint_method=name,
            kind=KIND,
            method_params={},
            replay={"protocol": "causal"},
            seed=1,
            tuning_jobs=0,
        )
        return frame, False
    if path == "calibration trial":
        frame = score_methods(converted, {"kind": KIND}, "t", [name], {}, {}, 1)
        return frame, False
    variant = {"audit step6": "step6", "audit step0": "step0"}[path]
    frame = run_variant(
        converted_dir=str(converted),
        dataset="t",
        kind=KIND,
        variant=variant,
        replay={},
        methods={"recorded": {"method": name}},
        n_jobs=0,
        seed=1,
        machines=[100],
        repeats=1,
        out=str(tmp / "audit.csv"),
    )
    return with_status(frame), variant == "step6"


def with_status(frame: pd.DataFrame) -> pd.DataFrame:
    """A summary's rows (tuning grid points, audit rows) marked ok when no job failed."""
    return frame.assign(status=frame["jobs_failed"].map({0: "ok"}).fillna("failed"))


PATHS = [
    "predict",
    "tune",
    "protocol causal",
    "fingerprint",
    "calibration trial",
    "audit step6",
    "audit step0",
]


@pytest.mark.parametrize("path", PATHS)
def test_every_path_hands_a_cross_job_method_its_history(
    path, converted, history_seen, handed, tmp_path
):
    frame, on_the_trace_clock = run_path(path, converted, tmp_path)
    given = [history for method, history in handed if method == "HistorySeen"]
    assert given, f"{path}: HistorySeen was never replayed"
    assert all(isinstance(history, JobHistory) for history in given), path
    # the history reads the machine state the method asks for, as its jobs do
    assert all(history.machine_state == machine_state_columns(KIND) for history in given)
    if on_the_trace_clock:  # the method itself saw the history and its jobs' machine state
        assert history_seen.seen and len(history_seen.seen) == len(given)
        assert {seen[1] for seen in history_seen.seen} == {"JobHistory"}
        assert all(seen[2] == tuple(machine_state_columns(KIND)) for seen in history_seen.seen)
        assert set(frame["status"]) == {"ok"}
    else:  # the aligned timeline refuses a cross-job method (the trace's clock is lost)
        assert not history_seen.seen and set(frame["status"]) == {"failed"}
        if "reason" in frame:
            assert frame["reason"].str.contains("trace's clock").all()


def test_the_fingerprint_runs_a_cross_job_method_on_the_trace_clock_when_asked(
    converted, history_seen, tmp_path
):
    """The fingerprint's paper replay refuses HistorySeen for the timeline, not for a missing
    history: under the causal protocol the same call runs it with its history."""

    frame = protocol_job_metrics(
        converted_dir=converted,
        dataset="t",
        kind=KIND,
        methods={"HistorySeen": {}},
        replay={"protocol": "paper"},
        protocol="causal",
        seed=1,
    )
    assert set(frame["status"]) == {"ok"} and len(frame) == len(read_manifest(converted))


def test_start_runs_with_its_history_in_the_fingerprint_replay(converted):
    """START on the path the fingerprint and sensitivity map share: before the service it
    failed every job there ("the replay gave no JobHistory")."""

    frame = protocol_job_metrics(
        converted_dir=converted,
        dataset="t",
        kind=KIND,
        methods={"START": {"epochs": 5, "refit_every": 2}},
        replay={},
        protocol="causal",
        seed=1,
    )
    assert set(frame["status"]) == {"ok"}, frame["reason"].tolist()


def test_kept_jobs_are_read_once_per_machine_state_reading(converted, monkeypatch):
    """`reuse`: the jobs are read once for every run of a call (one reading per machine-state
    need); without it, again for each run, one at a time."""
    import stragglers.replay.service as service

    reads = []
    iter_shard_jobs = service.iter_shard_jobs

    def counting(*args, **kwargs):
        reads.append(kwargs["machine_state"])
        return iter_shard_jobs(*args, **kwargs)

    monkeypatch.setattr(service, "iter_shard_jobs", counting)
    runs = [MethodRun("Elapsed", "Elapsed"), MethodRun("PCA", "PCA"), MethodRun("E2", "Elapsed")]
    kept = list(
        replay_methods(
            converted,
            KIND,
            runs,
            dataset="t",
            seed=1,
            replay={},
            selection=JobSelection(reuse=True),
            score=True,
        )
    )
    assert reads == [False]
    assert [r.run.label for r in kept] == ["Elapsed", "PCA", "E2"]
    assert all(set(r.metrics["method"]) == {r.run.label} for r in kept)
    reads.clear()
    again = list(replay_methods(converted, KIND, runs, dataset="t", seed=1, replay={}))
    assert reads == [False, False, False] and all(r.metrics is None for r in again)
    for one, other in zip(kept, again):
        pd.testing.assert_frame_equal(one.tasks, other.tasks, check_exact=True)


def test_replay_settings_set_the_config_protocol_aside_only_when_given_one():
    replay = {"checkpoint_interval": 60.0, "protocol": "causal", "overrides": {"timeline": "x"}}
    with pytest.raises(ValueError):
        replay_settings(replay)  # the config's own overrides are checked
    paper = replay_settings(replay, protocol="paper", overrides={"prune_scored": False})
    assert paper.protocol == "paper" and paper.overrides == {"prune_scored": False}
    assert paper.checkpoint_interval == 60.0
    assert replay_settings({"protocol": "paper"}, kill_delay=5.0).kill_delay == 5.0
    with pytest.raises(ValueError, match="overrides are set with a protocol"):
        replay_settings({}, overrides={"prune_scored": False})
