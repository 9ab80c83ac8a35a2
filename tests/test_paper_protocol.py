"""`replay.protocol: paper` (the reference script's experiment) rule by rule on hand-made
jobs, the last-step == causal identity of the audit, the outlier detectors' rules, the aligned-timeline simulation and the
validation of `replay.overrides`."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from jobfactory import LAST, hand_job, make_job
from workflow_runs import ROOT

from stragglers.formats.protocols import PRESETS, RULE_CHOICES, SCRIPT_OUTLIER_RULES, resolve_rules
from stragglers.methods import get_method
from stragglers.methods._features import fit_standardizer, job_seed
from stragglers.methods.base import Checkpoint, JobInfo, Method
from stragglers.methods.gbtr import GBTR
from stragglers.methods.nurd import NURD
from stragglers.methods.oracle import Oracle
from stragglers.replay import aligned
from stragglers.replay.core import ReplaySettings, pruned_tasks
from stragglers.replay.runner import replay_job, run_method_on_jobs
from stragglers.report.audit import LAST_STEP, VARIANTS
from stragglers.simulate.jct import mitigated_jct_limited, mitigated_jct_unlimited

# ----------------------------------------------------------------------------- rule 1-2


def test_windows_and_cumulative_features_by_hand():
    job = hand_job([[(100, 2.0), (300, 4.0)], [(300, 1.0)]])
    view = aligned.build_view(job, np.array([False]), "divided_by_final", piece=300)
    np.testing.assert_array_equal(view.n_windows, [2, 1])
    np.testing.assert_allclose(view.latency, [400, 300])
    np.testing.assert_allclose(view.elapsed, [100, 400, 300])
    # 100/400 * 2 = 0.5, then + 300/400 * 4 = 3.5; a one-window task shows its value
    np.testing.assert_allclose(view.cumulative[:, 0], [0.5, 3.5, 1.0])
    mean = aligned.build_view(job, np.array([False]), "mean_so_far", piece=300)
    np.testing.assert_allclose(mean.cumulative[:, 0], [2.0, (200 + 1200) / 400, 1.0])
    last = aligned.build_view(job, np.array([True]), "mean_so_far", piece=300)
    np.testing.assert_allclose(last.cumulative[:, 0], [2.0, 4.0, 1.0])


def test_running_counts_enter_divided_by_final_as_per_window_counts():
    # task 0 has evictions so far 1, 3 over windows of 100 s and 300 s: per window 1 and 2,
    # so its EV at window 1 is 100/400 * 1 + 300/400 * 2 = 1.75 (the running totals gave
    # 100/400 * 1 + 300/400 * 3 = 2.5); task 1 (one window, total 2) shows 2
    job = hand_job([[(100, 1.0), (300, 3.0)], [(300, 2.0)]])
    np.testing.assert_array_equal(
        aligned.per_window_counts(np.array([0, 0, 1]), np.array([[1.0], [3.0], [2.0]])),
        [[1.0], [2.0], [2.0]],
    )
    view = aligned.build_view(job, np.array([True]), "divided_by_final", piece=300)
    np.testing.assert_allclose(view.cumulative[:, 0], [0.25, 1.75, 2.0])
    # mean_so_far keeps the latest running total
    last = aligned.build_view(job, np.array([True]), "mean_so_far", piece=300)
    np.testing.assert_allclose(last.cumulative[:, 0], [1.0, 3.0, 2.0])


def test_script_column_order():
    from stragglers.formats.datasets import feature_columns

    google = feature_columns("google-2011")
    ordered = [google[i] for i in aligned.script_column_order(google)]
    assert ordered[:3] == ["cpu_rate", "canonical_memory_usage", "assigned_memory_usage"]
    assert ordered[8] == "maximum_cpu_rate" and ordered[-3:] == [
        "sampled_cpu_usage",
        "evictions_so_far",
        "failures_so_far",
    ]
    alibaba = feature_columns("alibaba-2018")  # cpu_avg, cpu_max, mem_avg, mem_max
    np.testing.assert_array_equal(aligned.script_column_order(alibaba), [0, 2, 3, 1])
    events = feature_columns("google-2011-events")  # not in the script's layout: unchanged
    np.testing.assert_array_equal(aligned.script_column_order(events), np.arange(len(events)))


def test_paper_uses_the_scripts_regressor_and_causal_xgboost():
    from sklearn.ensemble import GradientBoostingRegressor

    from stragglers.methods.nurd import BoostedLatencyModel

    job = make_job(n_tasks=60, seed=3)
    fitted = {}
    for protocol in ("paper", "causal"):
        method = NURD({"alpha": 0.0})
        replay_job(job, method, ReplaySettings(protocol=protocol), LAST, seed=1)
        fitted[protocol] = method.regressor
    assert isinstance(fitted["paper"], GradientBoostingRegressor)
    assert fitted["paper"].random_state == 42 and fitted["paper"].n_estimators == 100
    assert isinstance(fitted["causal"], BoostedLatencyModel)
    method = NURD({"alpha": 0.0, "regressor": "xgboost"})
    replay_job(job, method, ReplaySettings(protocol="paper"), LAST, seed=1)
    assert isinstance(method.regressor, BoostedLatencyModel)
    with pytest.raises(ValueError, match="regressor"):
        NURD({"regressor": "gbm"}).start_job(method.job)
    with pytest.raises(ValueError, match="replay.overrides.regressor"):
        ReplaySettings(protocol="paper", overrides={"regressor": "lightgbm"})


def test_long_windows_are_cut_into_pieces_of_the_interval():
    task, duration, values = aligned.split_windows(
        np.array([0, 1]), np.array([150.0, 60.0]), np.array([[1.0], [2.0]]), 60.0
    )
    np.testing.assert_array_equal(task, [0, 0, 0, 1])
    np.testing.assert_allclose(duration, [60, 60, 30, 60])
    np.testing.assert_allclose(values[:, 0], [1, 1, 1, 2])


# ----------------------------------------------------------------------------- rule 3-5


def test_scaling_with_final_values_drops_constant_columns():
    scale = aligned.final_scale(
        np.array([[1.0, 5.0], [3.0, 5.0], [2.0, 5.0]]), np.array([10.0, 20.0, 30.0])
    )
    np.testing.assert_array_equal(scale.keep, [True, False])
    np.testing.assert_allclose(
        scale.features(np.array([[1.0, 5.0], [3.0, 5.0], [2.0, 9.0]])), [[0.0], [1.0], [0.5]]
    )
    np.testing.assert_allclose(scale.latency(np.array([10.0, 25.0])), [0.0, 0.75])


def test_tau_and_initial_split_at_int_q_n():
    latency = np.arange(25.0)[::-1]  # 24 .. 0
    # int(0.9 * 25) = 22 -> tau = 22; int(0.04 * 25) = 1 -> cut = 1, so only latency 0
    assert aligned.sorted_index_value(latency, 0.9) == 22.0
    np.testing.assert_array_equal(np.flatnonzero(aligned.initial_split(latency, 0.04)), [24])


def test_pruning_of_the_scored_set():
    latency = np.array([0.5, 10, 11, 12, 20, 21, 22])
    n_windows = np.array([1, 1, 2, 6, 5, 5, 2])
    # cut = sorted[int(0.2 * 7) = 1] = 10; gap = 10, 11, 12 with windows 1, 2, 6 (mean 3):
    # more than 4 -> task 3; stragglers (>= 20) windows 5, 5, 2 (mean 4): fewer than 3 -> task 6
    dropped = pruned_tasks(latency, n_windows, threshold=20.0, start_fraction=0.2)
    np.testing.assert_array_equal(np.flatnonzero(dropped), [3, 6])


def test_finished_set_update_and_checkpoint_range():
    n_windows = np.array([1, 3, 2, 5])
    initial = np.array([True, False, False, False])
    in_play = ~initial
    # k = 2: only the initial set; task 1 (last window 2) joins after checkpoint 2; task 2
    # ended (last window 1) before the first checkpoint and never joins, as in the script
    assert aligned.finished_at(2, n_windows, initial, in_play, 2).tolist() == [
        True,
        False,
        False,
        False,
    ]
    assert aligned.finished_at(3, n_windows, initial, in_play, 2).tolist() == [
        True,
        True,
        False,
        False,
    ]
    assert aligned.finished_at(5, n_windows, initial, in_play, 2).tolist() == [
        True,
        True,
        False,
        True,
    ]
    assert list(aligned.checkpoint_range(np.array([3, 6, 4]), np.array([False, True, True]))) == [
        2,
        3,
        4,
    ]


# ----------------------------------------------------------------------------- end to end


class Recorder(Method):
    name = "Recorder"
    family = "test"
    defaults = {"flag_task": -1, "flag_at": -1}

    def start_job(self, job):
        super().start_job(job)
        self.seen = []

    def predict(self, checkpoint):
        self.seen.append(checkpoint)
        flags = np.zeros(len(checkpoint.running_tasks), dtype=bool)
        if checkpoint.index == self.params["flag_at"]:
            flags = checkpoint.running_tasks == self.params["flag_task"]
        return flags


# windows per task (300 s each, feature x = task index): latencies 300 * windows
WINDOW_COUNTS = [1, 2, 3, 3, 4, 4, 5, 5, 6, 8]
PAPER = ReplaySettings(protocol="paper", start_fraction=0.2, checkpoint_interval=300)


def ten_task_job():
    return hand_job([[(300.0, float(i))] * w for i, w in enumerate(WINDOW_COUNTS)])


def test_paper_replay_by_hand():
    job = ten_task_job()
    method = Recorder({"flag_task": 9, "flag_at": 6})
    run = replay_job(job, method, PAPER, np.array([False]), seed=0)
    # tau = sorted[int(0.9 * 10)] = 2400 -> straggler: task 9 (8 windows), K = 8, checkpoints
    # 2..6; cut = sorted[int(0.2 * 10)] = 900 -> initial finished: tasks 0, 1; gap: tasks
    # 2..8, windows 3,3,4,4,5,5,6 (mean 4.29) -> task 8 (6 > 5.29) pruned
    assert run.threshold == 2400.0
    assert [c.index for c in method.seen] == [2, 3, 4, 5, 6]
    assert [c.time for c in method.seen] == [900.0, 1200.0, 1500.0, 1800.0, 2100.0]
    assert [c.finished_tasks.tolist() for c in method.seen] == [
        [0, 1],
        [0, 1, 2, 3],
        [0, 1, 2, 3, 4, 5],
        [0, 1, 2, 3, 4, 5, 6, 7],
        [0, 1, 2, 3, 4, 5, 6, 7],
    ]
    assert method.seen[0].running_tasks.tolist() == [2, 3, 4, 5, 6, 7, 9]
    assert method.seen[-1].running_tasks.tolist() == [9]
    # scaled: x final = task index over 0..9, latency (300 w - 300) / 2100
    first = method.seen[0]
    assert first.prescaled
    np.testing.assert_allclose(first.finished_features[:, 0], [0.0, 1 / 9])
    np.testing.assert_allclose(first.finished_latency, [0.0, 300 / 2100])
    # running task 2 at k = 2 (its last window): 3 windows x 1/3 x value 2 -> 2, scaled 2/9;
    # task 9 at k = 2: 3/8 of its value 9 -> 27/8, scaled 27/72
    np.testing.assert_allclose(first.running_features[[0, -1], 0], [2 / 9, 27 / 72])
    assert method.job.straggler_threshold == pytest.approx((2400 - 300) / 2100)
    # scoring: the pruned task and the initial set are not scored; the flag at k = 6 = K - 2
    # (the second-to-last checkpoint) counts, at aligned time (6 + 1) * 300
    assert run.evaluated.tolist() == [False, False, True, True, True, True, True, True, False, True]
    assert run.flag_time[9] == 2100.0 and np.isnan(run.flag_time[:9]).all()
    np.testing.assert_allclose(run.latency, 300.0 * np.array(WINDOW_COUNTS))
    np.testing.assert_allclose(run.task_start, 0.0)


def test_a_job_without_a_scored_checkpoint_has_no_result_as_in_the_script():
    """K = 3 (the straggler's window count): the script runs one checkpoint, k = 2, and its
    scoring reads the second-to-last row, which does not exist, so the job yields no result.
    Here it is asked nothing, scores nothing, and job_metrics counts it as unscorable."""
    from stragglers.evaluate.metrics import job_metrics, summary_table

    short = hand_job(
        [[(300.0, float(i))] * w for i, w in enumerate([1, 1, 2, 2, 2, 2, 2, 2, 2, 3])],
        name="short",
    )
    method = Recorder()
    run = replay_job(short, method, PAPER, np.array([False]), seed=0)
    assert method.seen == [] and run.n_checkpoints == 0
    assert not run.evaluated.any()
    tasks, jobs = run_method_on_jobs(
        iter([short, ten_task_job()]), Recorder, {}, PAPER, np.array([False]), 0, "hand"
    )
    metrics = job_metrics(tasks, jobs).set_index("job_id")
    assert metrics["status"].to_dict() == {"short": "unscorable", "hand": "ok"}
    summary = summary_table(job_metrics(tasks, jobs)).iloc[0]
    assert summary["jobs_evaluated"] == 1 and summary["jobs_unscorable"] == 1


def test_flagged_tasks_stay_among_the_running_rows_on_the_aligned_timeline():
    method = Recorder({"flag_task": 9, "flag_at": 2})
    run = replay_job(ten_task_job(), method, PAPER, np.array([False]), seed=0)
    assert all(9 in c.running_tasks for c in method.seen)
    assert run.flag_time[9] == 900.0  # the first flag is kept


def test_initial_finished_first_to_finish_scores_every_task():
    settings = ReplaySettings(
        protocol="paper",
        start_fraction=0.2,
        checkpoint_interval=300,
        overrides={"initial_finished": "first_to_finish", "prune_scored": False},
    )
    method = Recorder()
    run = replay_job(ten_task_job(), method, settings, np.array([False]), seed=0)
    # 2 tasks (20%) must have finished: task 0 (last window 0) and 1 (last 1) before k = 2
    assert method.seen[0].index == 2 and method.seen[0].finished_tasks.tolist() == [0, 1]
    assert run.evaluated.all()


def test_nurd_alpha_zero_runs_on_the_paper_protocol():
    job = make_job(n_tasks=120, seed=3)
    run = replay_job(job, NURD({"alpha": 0.0}), ReplaySettings(protocol="paper"), LAST, seed=1)
    assert run.n_checkpoints > 0
    with pytest.raises(
        ValueError, match=r"parameter 'alpha' must be a number in \[0, 1\], got -0.1"
    ):
        NURD({"alpha": -0.1}).start_job(type("I", (), {"seed": 0})())


# ----------------------------------------------------------------------------- audit last step


def test_audit_last_step_is_the_causal_protocol_exactly():
    last = VARIANTS[f"step{LAST_STEP}"]["overrides"]
    assert resolve_rules("paper", last) == PRESETS["causal"]
    assert resolve_rules("paper", VARIANTS["step6"]["overrides"]) != PRESETS["causal"]
    jobs = [make_job(n_tasks=150, seed=s) for s in (1, 2)]
    for method_class, params in (
        (NURD, {"alpha": 0.5}),
        (GBTR, {}),
        (Oracle, {}),
        (get_method("SOD"), {}),
    ):
        frames = []
        for settings in (
            ReplaySettings(),
            ReplaySettings(protocol="paper", overrides=last),
        ):
            tasks, jobs_frame = run_method_on_jobs(
                iter(jobs), method_class, params, settings, LAST, 7, "d"
            )
            frames.append((tasks, jobs_frame.drop(columns="seconds")))
        pd.testing.assert_frame_equal(frames[0][0], frames[1][0])
        pd.testing.assert_frame_equal(frames[0][1], frames[1][1])


# ----------------------------------------------------------------------------- simulation


def test_aligned_timeline_simulation_by_hand():
    latency = np.array([600.0, 900.0, 3000.0])
    # task 2 flagged at k = 2 -> aligned time 900; task 1 too, but its life [0, 900) is over
    flags = aligned.simulation_flags(np.array([np.nan, 900.0, 900.0]), latency)
    assert np.isnan(flags[:2]).all() and flags[2] == 900.0
    start = np.zeros(3)
    replacement = np.array([[600.0, 600.0, 600.0]])
    base, mitigated = mitigated_jct_unlimited(start, latency, flags, replacement)
    assert base == 3000.0 and mitigated.tolist() == [1500.0]  # 900 + 600
    # 3 machines: at 900 only task 2 runs, a machine is free -> relaunched, ends at 1500;
    # 1 machine: task 2 holds it, waits, never relaunched -> 3000
    _, limited = mitigated_jct_limited(
        start, latency, flags, replacement, [3, 1], grid_origin=0.0, checkpoint_interval=300.0
    )
    assert limited[:, 0].tolist() == [1500.0, 3000.0]


# ----------------------------------------------------------------------------- validation


def test_unknown_override_is_rejected_naming_the_setting():
    with pytest.raises(ValueError, match=r"replay\.overrides\.pruning: unknown override"):
        ReplaySettings(protocol="paper", overrides={"pruning": False})
    with pytest.raises(ValueError, match=r"replay\.overrides\.scaling must be one of"):
        ReplaySettings(protocol="paper", overrides={"scaling": "global"})
    with pytest.raises(ValueError, match=r"replay\.overrides\.initial_finished"):
        ReplaySettings(protocol="causal", overrides={"initial_finished": "shortest"})


def test_schema_rejects_an_unknown_override_naming_it():
    import yaml
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    validate(dict(config), str(ROOT / "workflow" / "schemas" / "config.schema.yaml"))
    config["replay"] = {**config["replay"], "protocol": "paper", "overrides": {"pruning": False}}
    with pytest.raises(WorkflowError, match="pruning"):
        validate(config, str(ROOT / "workflow" / "schemas" / "config.schema.yaml"))


def test_a_column_constant_up_to_rounding_is_dropped():
    values = np.array([[0.3, 1.0], [0.3 * (1 + 1e-15), 2.0], [0.3, 3.0]])
    scale = aligned.final_scale(values, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(scale.keep, [False, True])


# ----------------------------------------------------------------------------- audit table


def test_audit_variants_walk_from_paper_to_causal():
    assert VARIANTS["step0"]["overrides"] == {}
    assert resolve_rules("paper", VARIANTS["step5"]["overrides"]).timeline == "aligned"
    assert resolve_rules("paper", VARIANTS["alone3"]["overrides"]) == resolve_rules(
        "paper", {"scaling": "visible"}
    )
    for spec in VARIANTS.values():  # every variant is a valid configuration
        ReplaySettings(protocol="paper", overrides=spec["overrides"])


def test_audit_table_one_markdown_table_per_dataset_with_paper_numbers(tmp_path):
    from stragglers.report.audit import audit_table

    methods = {
        "NURD a=0": {"method": "NURD", "params": {"alpha": 0}},
        "NURD a=0.5": {"method": "NURD"},
        "Oracle": {"method": "Oracle"},
    }
    files = []
    for dataset in ("g", "a"):
        for variant, spec in VARIANTS.items():
            rows = [
                {
                    "dataset": dataset,
                    "variant": variant,
                    "path": spec["path"],
                    "step": spec["step"],
                    "change": spec["change"],
                    "overrides": repr(spec["overrides"]),
                    "method": label,
                    "jobs": 2,
                    "jobs_scored": 2,
                    "jobs_failed": 0,
                    "TPR": 0.5,
                    "FPR": 0.1,
                    "F1": 0.1 * spec["step"]
                    + (0.01 if label == "NURD a=0" else 0.0)
                    + (0.002 if variant == "step0xgb" else 0.0),
                    "reduction_alg2": -0.1,
                    "reduction_alg3": -0.2,
                    "reduction_alg2_replace_latency": 0.17,
                    "seconds": 1.0,
                }
                for label in methods
            ]
            path = tmp_path / f"{dataset}-{variant}.csv"
            pd.DataFrame(rows).to_csv(path, index=False)
            files.append(str(path))
    out = tmp_path / "audit"
    table = audit_table(
        variant_files=files,
        datasets={"g": "google-2011", "a": "alibaba-2018"},
        methods=methods,
        headline=("NURD a=0", "NURD a=0.5"),
        paper_table=str(ROOT / "stragglers" / "data" / "paper_table3.csv"),
        benchmark_files=[],
        out_csv=str(out) + ".csv",
        out_md=str(out) + ".md",
        out_png=str(out) + ".png",
    )
    text = (tmp_path / "audit.md").read_text()
    assert text.count("## g") == 1 and text.count("## a") == 1
    assert "| paper |" in text and "0.81 / +26%" in text and "0.59 / +19%" in text
    # both readings of Algorithm 2: ours (copy from the flag), then replace-the-latency
    assert "0.01 / -10% / +17%" in text
    ladder = table[(table["method"] == "NURD (ladder)") & (table["path"] == "cumulative")]
    # alpha 0 at step 0 (with the script's regressor and with XGBoost), alpha 0.5 from step 1
    # on; step 1 shares the runs of step 0 with XGBoost
    g = ladder[ladder["dataset"] == "g"]
    assert g[g["variant"] == "step0"]["F1"].item() == pytest.approx(0.01)
    assert g[g["variant"] == "step0xgb"]["F1"].item() == pytest.approx(0.012)
    assert g[g["step"] == 1]["F1"].item() == pytest.approx(0.002)
    rows = [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| 0")]
    assert rows[:4] == ["| 0", "| 0 XGBoost", "| 0", "| 0 XGBoost"]
    assert (tmp_path / "audit.png").stat().st_size > 0


def test_finished_rows_in_the_scripts_order():
    # 45 tasks: 3 and 40 are the initial finished set (latency below the int(0.05 n) cut),
    # task 44 is the only straggler. The script's initial rows are list(set(...) - set(...)):
    # in CPython 40 comes before 3 (slots 0 and 3 of an 8-slot table); tasks that finish
    # later are appended stragglers first, then by position
    latency = np.full(45, 50.0)
    latency[[3, 40]] = 1.0
    latency[44] = 200.0
    stragglers = latency >= 100.0
    order: list[int] = []
    aligned.script_row_order(order, np.array([3, 40]), stragglers, latency, 100.0, 0.05)
    assert order == [40, 3]
    aligned.script_row_order(order, np.array([3, 7, 40, 44, 2]), stragglers, latency, 100.0, 0.05)
    assert order == [40, 3, 44, 2, 7]


# ----------------------------------------------------------------------------- outlier rules


def causal_with(rules):
    """The causal preset with `rules` flipped, as a replay hands them in JobInfo.rules."""
    return dataclasses.replace(PRESETS["causal"], **rules)


def outlier_run(name, rules, finished, running, latency=None, tau=0.5, params=None, order=None):
    """One checkpoint of detector `name` under the given outlier rules (others: causal's);
    returns (method, flags)."""
    method = get_method(name)(params or {}, seed=3)
    d = finished.shape[1]
    fin = np.arange(len(finished))
    run = np.arange(len(finished), len(finished) + len(running))
    if latency is None:
        latency = np.linspace(0.0, 1.0, len(finished))
    method.start_job(
        JobInfo(
            job_id="j",
            n_tasks=len(fin) + len(run),
            feature_names=tuple(f"x{i}" for i in range(d)),
            straggler_threshold=tau,
            seed=11,
            rules=causal_with(rules),
        )
    )
    flags = method.predict(
        Checkpoint(
            time=1.0,
            index=2,
            first_prediction=True,
            finished_tasks=fin,
            finished_features=finished,
            finished_latency=np.asarray(latency, dtype=float),
            running_tasks=run,
            running_features=running,
            running_elapsed=np.ones(len(run)),
            prescaled=True,
            running_order=order,
        )
    )
    return method, flags


def unit_rows(n, d=3, seed=0):
    return np.random.default_rng(seed).uniform(size=(n, d))


def test_paper_sets_every_outlier_rule_the_scripts_way_and_causal_ours():
    for name, script_value in SCRIPT_OUTLIER_RULES.items():
        assert getattr(PRESETS["paper"], name) == script_value == RULE_CHOICES[name][0]
        assert getattr(PRESETS["causal"], name) == RULE_CHOICES[name][1]
        assert getattr(PRESETS["reference"], name) == RULE_CHOICES[name][1]
    with pytest.raises(ValueError, match="replay.overrides.outlier_batch"):
        resolve_rules("paper", {"outlier_batch": "sideways"})


def test_outlier_scaling_as_given_fits_on_the_handed_features():
    finished, running = unit_rows(40), unit_rows(10, seed=1)
    from pyod.models.knn import KNN as PyodKNN

    method, _ = outlier_run("KNN", {"outlier_scaling": "as_given"}, finished, running)
    assert method._state.scaler is None
    direct = PyodKNN().fit(finished).decision_scores_
    np.testing.assert_array_equal(method._state.detector.decision_scores_, direct)
    method, _ = outlier_run("KNN", {}, finished, running)
    z = fit_standardizer(finished, running).transform(finished)
    np.testing.assert_allclose(
        method._state.detector.decision_scores_, PyodKNN().fit(z).decision_scores_
    )
    assert not np.allclose(direct, PyodKNN().fit(z).decision_scores_)


def test_outlier_small_train_abstain_flags_nothing_where_the_detector_raises():
    finished, running = unit_rows(3), unit_rows(4, seed=1) + 5.0  # far from every finished row
    # KNN's 5 neighbours do not fit 3 rows: PyOD raises, the detector sits the checkpoint out
    method, flags = outlier_run("KNN", {"outlier_small_train": "abstain"}, finished, running)
    assert method._state is None and not flags.any()
    # shrunk to 2 neighbours it fits, and the far tasks are outliers
    method, flags = outlier_run("KNN", {}, finished, running)
    assert method._state.detector.n_neighbors == 2 and flags.all()


def test_cblof_and_sod_on_three_training_rows_under_every_protocol():
    finished, running = unit_rows(3), unit_rows(5, seed=1)
    for protocol in PRESETS:
        rules = {name: getattr(PRESETS[protocol], name) for name in SCRIPT_OUTLIER_RULES}
        for name in ("CBLOF", "SOD"):
            _, flags = outlier_run(name, rules, finished, running)  # no exception
            assert flags.shape == (5,)
    # ours: CBLOF falls back to 2 clusters with alpha 0.5 (PyOD needs beta > 1); SOD needs 4
    method, _ = outlier_run("CBLOF", {}, finished, running)
    assert method._state.detector.alpha == 0.5 and method._state.detector.beta == 1.5
    method, flags = outlier_run("SOD", {}, finished, running)
    assert method._state is None and not flags.any()
    method, _ = outlier_run("SOD", {}, unit_rows(4), running)
    assert (method._state.detector.n_neighbors, method._state.detector.ref_set) == (3, 2)
    with pytest.raises(ValueError, match="ref_set"):
        get_method("SOD")({"ref_set": 1})
    with pytest.raises(ValueError, match="beta"):
        get_method("CBLOF")({"beta": 1.0})


def test_outlier_batch_running_only_scores_the_running_tasks_alone_in_the_given_order():
    from pyod.models.sod import SOD as PyodSOD

    finished, running = unit_rows(30, seed=2), unit_rows(25, seed=3)
    order = np.r_[np.arange(5, 25), np.arange(5)]
    rules = {"outlier_batch": "running_only", "outlier_scaling": "as_given"}
    method, flags = outlier_run("SOD", rules, finished, running, order=order)
    reference = PyodSOD(contamination=0.1).fit(finished)
    expected = np.zeros(25, dtype=bool)
    expected[order] = reference.predict(running[order]) == 1
    np.testing.assert_array_equal(flags, expected)
    # with the training rows, the batch and so the flags differ
    batch = np.vstack([finished, running])
    with_training = reference.decision_function(batch)[30:] > reference.threshold_
    _, flags = outlier_run("SOD", {"outlier_scaling": "as_given"}, finished, running)
    np.testing.assert_array_equal(flags, with_training)


def test_outlier_seed_fixed_is_the_scripts_random_state():
    finished, running = unit_rows(40), unit_rows(10, seed=1)
    method, _ = outlier_run("IFOREST", {"outlier_seed": "fixed"}, finished, running)
    assert method._state.detector.random_state == 42
    method, _ = outlier_run("IFOREST", {}, finished, running)
    assert method._state.detector.random_state == job_seed(method.seed, 11, 2)


def test_abod_object_reused_keeps_the_lowered_neighbourhood():
    rules = {"abod_object": "reused", "outlier_small_train": "abstain"}
    method, _ = outlier_run("ABOD", rules, unit_rows(3), unit_rows(4, seed=1))
    first = method._state.detector
    assert first.n_neighbors == 2  # PyOD lowered it to n_train - 1
    # the next fit (more finished tasks) reuses the object: still 2 neighbours
    fin = np.arange(10)
    method.predict(
        Checkpoint(
            time=2.0,
            index=3,
            first_prediction=False,
            finished_tasks=fin,
            finished_features=unit_rows(10, seed=4),
            finished_latency=np.linspace(0, 1, 10),
            running_tasks=np.array([10, 11]),
            running_features=unit_rows(2, seed=5),
            running_elapsed=np.ones(2),
            prescaled=True,
        )
    )
    assert method._state.detector is first and first.n_neighbors == 2 and first.n_train_ == 10
    # a fresh object per fit: 5 neighbours on 10 rows
    method, _ = outlier_run("ABOD", {"outlier_small_train": "abstain"}, unit_rows(10), unit_rows(2))
    assert method._state.detector.n_neighbors == 5


def test_xgbod_script_labels_strictly_above_tau_and_fits_one_class():
    finished, running = unit_rows(30), unit_rows(5, seed=1)
    latency = np.r_[np.full(25, 0.2), np.full(5, 0.5)]  # five at tau exactly
    # ours: latency >= tau gives two classes; the script's latency > tau gives one
    method, _ = outlier_run("XGBOD", {}, finished, running, latency=latency, tau=0.5)
    assert method._state is not None and method._state.detector.n_detector_ == 12
    method, flags = outlier_run(
        "XGBOD", {"xgbod": "script"}, finished, running, latency=latency, tau=0.5
    )
    assert method._state is not None  # fit on the single class
    assert method._state.detector.n_detector_ > 12 and not flags.any()  # PyOD's default list


def test_outlier_refit_every_checkpoint_ignores_refit_growth():
    rules = {"outlier_refit": "every_checkpoint"}
    method = get_method("IFOREST")({}, seed=0)
    method.start_job(
        JobInfo(job_id="j", n_tasks=1, feature_names=("x",), straggler_threshold=1.0, seed=0)
    )
    assert method.refit_growth() == 0.5 and not method.refit_each_checkpoint()
    method.start_job(
        JobInfo(
            job_id="j",
            n_tasks=1,
            feature_names=("x",),
            straggler_threshold=1.0,
            seed=0,
            rules=causal_with(rules),
        )
    )
    # z-scores move with the running tasks: a refit at every checkpoint
    assert method.refit_growth() == 0.0 and method.refit_each_checkpoint()
    method.start_job(
        JobInfo(
            job_id="j",
            n_tasks=1,
            feature_names=("x",),
            straggler_threshold=1.0,
            seed=0,
            rules=causal_with({**rules, "outlier_scaling": "as_given"}),
        )
    )
    assert method.refit_growth() == 0.0 and not method.refit_each_checkpoint()


def test_outlier_constant_columns_keep_fits_pca_on_every_column():
    finished, running = unit_rows(30), unit_rows(5, seed=1)
    finished[:, 1] = 0.25  # constant over the training rows
    rules = {"outlier_scaling": "as_given"}
    method, _ = outlier_run("PCA", rules, finished, running)
    np.testing.assert_array_equal(method._state.columns, [True, False, True])
    method, _ = outlier_run("PCA", {**rules, "outlier_constant_columns": "keep"}, finished, running)
    np.testing.assert_array_equal(method._state.columns, [True, True, True])


def test_config_schema_accepts_exactly_the_rules_and_their_choices():
    import yaml

    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    overrides = schema["properties"]["replay"]["properties"]["overrides"]["properties"]
    assert set(overrides) == set(RULE_CHOICES)
    for name, choices in RULE_CHOICES.items():
        if "enum" in overrides[name]:
            assert overrides[name]["enum"] == list(choices), name


# ----------------------------------------------------------------------------- bench shims


def _reference_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "reference_script", ROOT / "bench" / "reference_script.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_script_guard_flags_nothing_where_a_detector_raises():
    from pyod.models.knn import KNN as PyodKNN

    bench = _reference_script()
    guarded = bench.guarded(PyodKNN)
    detector = guarded().fit(unit_rows(3))  # 5 neighbours on 3 rows: PyOD raises, guarded
    np.testing.assert_array_equal(detector.predict(unit_rows(4, seed=1)), np.zeros(4))
    train, test = unit_rows(30), unit_rows(6, seed=1) + np.r_[0, 0, 0, 5, 5, 5][:, None]
    np.testing.assert_array_equal(
        guarded().fit(train).predict(test), PyodKNN().fit(train).predict(test)
    )

    class Inner:
        def fit(self, X, y=None):
            raise ValueError("inner")

    class Outer:
        def __init__(self):
            self.inner = bench.guarded(Inner)()
            self.seen = None

        def fit(self, X, y=None):
            try:
                self.inner.fit(X)
            except ValueError as error:  # a nested guarded call raises to its caller
                self.seen = str(error)
            return self

    outer = bench.guarded(Outer)().fit(unit_rows(3))
    assert outer.seen == "inner" and not outer._guard_failed


def test_reference_script_reads_the_flags_get_tpr_fpr_scores():
    bench = _reference_script()
    pred = [[0, 1, 0, 0], [1, 0, 0, 0.2], [0, 0, 1, 0]]  # the last step is not scored
    np.testing.assert_array_equal(bench.script_flags(pred, 0.5), [True, True, False, False])
    np.testing.assert_array_equal(bench.script_flags(pred, 0.1), [True, True, False, True])


def test_reference_script_compares_flags_by_task_index():
    """The scripts score stragglers then gap tasks, each by task index (file name); a
    nurd-timeseries job's task positions are not its indices (its task_id is)."""
    bench = _reference_script()
    names = {  # the script's main() variables at its get_TPR_FPR calls
        "test_idx_init": [5, 9, 12],
        "good_stra_idx": [0, 2],  # 9 pruned
        "test_idx_gap": [1, 4, 8],
        "good_gap_idx": [1, 2],  # 1 pruned
    }
    assert bench.scored_task_indices(names) == [5, 12, 4, 8]
    assert bench.scored_task_indices({"test_idx_init": [5]}) is None
    script = dict(zip([5, 12, 4, 8], [True, False, True, False]))
    assert bench.tasks_differing(script, {12: False, 5: True, 8: False, 4: True}) == 0
    # a flag differs (4), a task scored by one side only (8; 2)
    assert bench.tasks_differing(script, {12: False, 5: True, 4: False, 2: False}) == 3

    class Job:  # positions sorted by start; task_id holds the file's index
        task_id = np.array(["12", "5", "4"])
        n_tasks = 3

    np.testing.assert_array_equal(bench.task_keys(Job, "nurd-timeseries"), [12, 5, 4])
    np.testing.assert_array_equal(bench.task_keys(Job, "google-2011"), [0, 1, 2])


def test_reference_script_extracts_the_archive_unchanged(tmp_path):
    import io
    import tarfile

    raw = tmp_path / "raw"
    raw.mkdir()
    files = {"77/0": b"1,2,77,0\n", "77/1": b"3,4,77,1\n3.5,4,77,1\n"}
    with tarfile.open(raw / "jobs.tar.gz", "w:gz") as archive:
        for name, data in files.items():
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    bench = _reference_script()
    folder = bench.raw_script_input(raw, tmp_path / "out")
    assert {f"{p.parent.name}/{p.name}": p.read_bytes() for p in folder.glob("*/*")} == files
    (folder / "77" / "0").write_bytes(b"changed")  # extracted once
    assert bench.raw_script_input(raw, tmp_path / "out") == folder
    assert (folder / "77" / "0").read_bytes() == b"changed"
    jobs = tmp_path / "folders"
    (jobs / "77").mkdir(parents=True)
    (jobs / "77" / "0").write_bytes(files["77/0"])
    assert bench.raw_script_input(jobs, tmp_path / "unused") == jobs  # read as it is


def test_reference_script_times_a_model_without_changing_it():
    from sklearn.linear_model import LinearRegression

    bench = _reference_script()
    X, y = unit_rows(20), np.arange(20.0)
    bench.SCRIPT_CPU.clear()
    timed = bench._timed_factory(LinearRegression, "lr")(fit_intercept=False).fit(X, y)
    np.testing.assert_array_equal(
        timed.predict(X), LinearRegression(fit_intercept=False).fit(X, y).predict(X)
    )
    assert set(bench.SCRIPT_CPU) == {"lr"} and bench.SCRIPT_CPU["lr"] >= 0
