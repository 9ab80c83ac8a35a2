"""The `calibration` config section's load-time checks and the search's seeded rounds
(stragglers/calibrate; docs/calibration.md), without a Snakemake run."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from stragglers.calibrate import check, search
from stragglers.calibrate.settings import (
    DEFAULT_SEED,
    check_calibration,
    dataset_knobs,
    search_fingerprint,
    start_settings,
)
from stragglers.replay import reach
from stragglers.rules.calibrate import check_params, last_rounds, search_params, target_inputs
from stragglers.traces.calibrate import read_task_events

ROOT = Path(__file__).resolve().parents[1]


def default_config() -> dict:
    """The default config as the workflow sees it: validated, the schema's defaults filled."""
    from snakemake.utils import validate

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    validate(config, str(ROOT / "workflow" / "schemas" / "config.schema.yaml"))
    return config


def with_calibration(**changes) -> dict:
    config = default_config()
    config["calibration"].update(changes)
    return config


def test_default_calibration_section_passes():
    check_calibration(default_config())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"seeds": [101, DEFAULT_SEED]}, "calibration.seeds: 20220301 is the seed"),
        ({"knobs": {"signature_strengthh": {"low": 0, "high": 1}}}, "knobs.signature_strengthh"),
        ({"knobs": {"n_jobs": {"low": 5, "high": 10}}}, "knobs.n_jobs: set by the section"),
        ({"knobs": {"feature_noise": {"low": 2.0, "high": 1.0}}}, "low 2.0 must be below high"),
        ({"knobs": {"decoy_fraction": {"low": 0.0, "high": 1.5}}}, "1.5 is outside what the"),
        ({"knobs": {"feature_noise": {"low": 0.0, "high": 1.0, "log": True}}}, "log range"),
        ({"knobs": {"max_tasks": {"low": 150, "high": 300.5}}}, "integer setting"),
        ({"methods": ["PCA", "NURD"]}, "NURD is not in the calibration set"),
    ],
)
def test_bad_calibration_config_is_refused(changes, message):
    with pytest.raises(ValueError, match="config calibration") as error:
        check_calibration(with_calibration(**changes))
    assert message in str(error.value)


def test_a_calibration_dataset_outside_the_run_loads_and_the_target_names_it():
    config = with_calibration(datasets=["nowhere"])
    check_calibration(config)  # a config with other datasets loads
    with pytest.raises(ValueError, match="calibration.datasets: nowhere is not a configured"):
        last_rounds(config["calibration"], config["datasets"])


def test_the_runs_own_seed_is_refused_too():
    config = with_calibration(seeds=[7])
    config["seed"] = 7
    with pytest.raises(ValueError, match="calibration.seeds: 7"):
        check_calibration(config)


def test_a_bad_section_stops_the_workflow_at_load(tmp_path):
    config = with_calibration(seeds=[DEFAULT_SEED])
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--snakefile",
            str(ROOT / "Snakefile"),
            "--directory",
            str(tmp_path),
            "--configfile",
            str(path),
            "--replace-workflow-config",
            "-n",
            "calibrate",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode != 0
    assert "calibration.seeds: 20220301" in run.stdout + run.stderr


def test_start_settings_are_the_datasets_own_clipped_into_range():
    config = default_config()
    dataset = copy.deepcopy(config["datasets"]["google-synthetic"])
    dataset["generator"]["signature_strength"] = 9.0
    dataset["generator"].pop("feature_noise", None)  # unset: the generator's default, 1.0
    knobs = {
        "signature_strength": {"low": 0.0, "high": 4.0},
        "feature_noise": {"low": 0.5, "high": 2.0},
    }
    assert start_settings(dataset, knobs) == {"signature_strength": 4.0, "feature_noise": 1.0}


KNOBS = {"signature_strength": {"low": 0.0, "high": 3.0}, "max_tasks": {"low": 150, "high": 400}}


def propose(tmp_path, round_, name="study.db", out="p.json", fingerprint="f"):
    return search.propose_round(
        storage_path=tmp_path / name,
        fingerprint=fingerprint,
        kind="google-2011",
        knobs=KNOBS,
        start={"signature_strength": 1.0, "max_tasks": 400},
        round_=round_,
        batch=3,
        sampler_seed=4,
        startup_trials=2,
        out=tmp_path / out,
    )


def tell(
    tmp_path,
    round_,
    proposals,
    name="study.db",
    shapes=None,
    tolerance=None,
    reach_gaps=None,
    reach_tolerance=None,
):
    """Tell a round: distance |signature_strength - 2|; with `shapes` (a search held to the
    real tails), each trial's tail-shape distance and the tolerance; with `reach_gaps`, each
    trial's gap to the real reach and its tolerance."""
    results = [
        {
            "settings": p["settings"],
            "distance": abs(p["settings"]["signature_strength"] - 2.0),
            "seconds": 1.0,
            "rows_scored": 1,
            "target": "Table 3",
            "paper_distance": 1.0,
            "methods": {},
            **({} if shapes is None else {"shape_distance": shapes[i]}),
            **({} if reach_gaps is None else {"reach_gap": reach_gaps[i]}),
        }
        for i, p in enumerate(proposals)
    ]
    return search.tell_round(
        storage_path=tmp_path / name,
        fingerprint="f",
        round_=round_,
        sampler_seed=4,
        startup_trials=2,
        proposals={"trials": proposals},
        results=results,
        out=tmp_path / f"told-{name}-{round_}.json",
        realism_tolerance=tolerance,
        reach_tolerance=reach_tolerance,
    )


def test_rounds_are_seeded_repeatable_and_start_from_the_datasets_settings(tmp_path):
    first = propose(tmp_path, 0)
    assert first[0]["settings"] == {"signature_strength": 1.0, "max_tasks": 400}
    assert all(isinstance(p["settings"]["max_tasks"], int) for p in first)
    assert propose(tmp_path, 0) == first  # asked once: proposing again reads the storage
    tell(tmp_path, 0, first)
    tell(tmp_path, 0, first)  # told once: a second tell after a restart changes nothing
    second = propose(tmp_path, 1)
    # a second storage with the same config proposes the same trials
    again = propose(tmp_path, 0, name="other.db", out="q.json")
    tell(tmp_path, 0, again, name="other.db")
    assert propose(tmp_path, 1, name="other.db", out="q.json") == second
    assert json.loads((tmp_path / "p.json").read_text())["trials"] == second


def test_a_round_cut_short_while_asked_is_asked_again_the_same(tmp_path):
    import optuna

    reference = propose(tmp_path, 0, name="ref.db")
    study, _ = search.open_study(tmp_path / "cut.db", "f", 4, 0, startup_trials=2)
    study.enqueue_trial(reference[0]["settings"])
    trial = study.ask(search.distributions("google-2011", KNOBS))
    trial.set_user_attr("round", 0)
    trial.set_user_attr("index", 0)  # killed here, before the round's other asks
    resumed = propose(tmp_path, 0, name="cut.db")
    assert [p["settings"] for p in resumed] == [p["settings"] for p in reference]
    states = [
        t.state
        for t in optuna.load_study(
            study_name=search.STUDY_NAME, storage=f"sqlite:///{tmp_path / 'cut.db'}"
        ).trials
    ]
    assert states[0] == optuna.trial.TrialState.FAIL  # kept, marked abandoned


def test_a_trial_aimed_at_a_real_datasets_rows_measures_its_distance_to_them(tmp_path):
    """With a target (a real dataset's per-method rates), the trial's distance is to those
    rates and its distance to Table 3 is kept beside it: aimed at the trial's own rates, the
    distance is 0 and the Table 3 distance is the untargeted trial's."""
    from stragglers.calibrate.trial import run_trial

    config = default_config()
    dataset = copy.deepcopy(config["datasets"]["google-synthetic"])
    common = dict(
        dataset_name="google-synthetic",
        dataset=dataset,
        settings={"median_task_duration_s": 600, "job_duration_spread": 0.1},
        seeds=[5],
        n_jobs=3,
        methods=["GBTR", "PCA"],
        method_params={},
        replay=config["replay"],
        paper_table=str(ROOT / "stragglers" / "data" / "paper_table3.csv"),
        workdir=str(tmp_path),
    )
    untargeted = run_trial(**common)
    assert untargeted["target"] == "Table 3"
    assert untargeted["distance"] == pytest.approx(untargeted["paper_distance"])
    rates = pd.DataFrame.from_dict(untargeted["methods"], orient="index")
    own = pd.DataFrame(
        {
            "method": ["gbtr", "P.C.A."],  # matched ignoring case and punctuation
            "TPR": rates.loc[["GBTR", "PCA"], "TPR"].to_numpy(),
            "FPR": rates.loc[["GBTR", "PCA"], "FPR"].to_numpy(),
            "FNR": 1 - rates.loc[["GBTR", "PCA"], "TPR"].to_numpy(),
            "F1": rates.loc[["GBTR", "PCA"], "F1"].to_numpy(),
        }
    )
    aimed = run_trial(**common, target=own, target_name="own")
    assert aimed["target"] == "own"
    assert aimed["distance"] == pytest.approx(0.0)
    assert aimed["paper_distance"] == pytest.approx(untargeted["paper_distance"])
    assert aimed["methods"]["PCA"]["target_FPR"] == rates.loc["PCA", "FPR"]
    assert aimed["methods"]["PCA"]["paper_FPR"] == rates.loc["PCA", "paper_FPR"]
    # a target two rows away: the distance is the mean of |dTPR| + |dFPR| over its rows
    moved = own.assign(TPR=(own["TPR"] - 0.1).clip(lower=0), FPR=(own["FPR"] + 0.05).clip(upper=1))
    expected = ((own["TPR"] - moved["TPR"]).abs() + (own["FPR"] - moved["FPR"]).abs()).mean()
    assert run_trial(**common, target=moved)["distance"] == pytest.approx(expected)


def test_a_target_is_the_real_datasets_mean_rates_over_its_scored_jobs(tmp_path):
    from stragglers.calibrate.trial import target_rates
    from stragglers.evaluate.metrics import COUNT_COLUMNS, KEYS

    def job(method, job_id, status, tpr, fpr):
        row = {key: None for key in KEYS}
        row.update(dataset="real", method=method, job_id=job_id, family="f", privileged=False)
        row.update({c: 1 for c in COUNT_COLUMNS})
        row.update(
            status=status,
            TPR=tpr,
            FPR=fpr,
            FNR=None if tpr is None else 1 - tpr,
            precision=0.5,
            F1=0.5,
        )
        return row

    files = []
    for method, rows in {
        "GBTR": [job("GBTR", 1, "ok", 0.4, 0.0), job("GBTR", 2, "ok", 0.6, 0.1)],
        "PCA": [job("PCA", 1, "ok", 1.0, 0.3), job("PCA", 2, "failed", None, None)],
    }.items():
        files.append(tmp_path / f"{method}.csv")
        pd.DataFrame(rows).to_csv(files[-1], index=False)
    rates = target_rates([str(f) for f in files]).set_index("method")
    assert rates.loc["GBTR", ["TPR", "FPR"]].tolist() == pytest.approx([0.5, 0.05])
    assert rates.loc["PCA", ["TPR", "FPR"]].tolist() == pytest.approx([1.0, 0.3])
    with pytest.raises(ValueError, match="needs the real dataset's job metrics"):
        target_rates([])


def test_a_generated_target_is_refused_naming_it():
    with pytest.raises(ValueError, match="config calibration") as error:
        check_calibration(with_calibration(targets={"google-synthetic": "alibaba-synthetic"}))
    assert "targets.google-synthetic: alibaba-synthetic is generated" in str(error.value)


def test_a_target_outside_the_config_loads_and_the_search_names_it():
    """A config with other datasets keeps the default section and loads; the search itself
    (its inputs, its parameters) stops, naming the setting."""
    config = with_calibration(targets={"google-synthetic": "nowhere"})
    check_calibration(config)
    message = "calibration.targets.google-synthetic: nowhere is not a configured dataset"
    with pytest.raises(ValueError, match=message):
        target_inputs(config, "google-synthetic", ["GBTR"])
    with pytest.raises(ValueError, match=message):
        search_params(config, "google-synthetic")
    others = default_config()
    others["datasets"] = {"google-synthetic": others["datasets"]["google-synthetic"]}
    check_calibration(others)  # the default section, without its target dataset


def test_a_target_of_another_paper_trace_is_refused():
    config = with_calibration(targets={"alibaba-synthetic": "google-2011-usage"})
    with pytest.raises(ValueError, match="not of the paper trace of alibaba-synthetic"):
        check_calibration(config)


def test_the_target_decides_the_searchs_inputs_and_its_fingerprint():
    config = default_config()
    aimed = search_params(config, "google-synthetic")
    assert aimed["target"] == "google-2011-usage"
    assert target_inputs(config, "google-synthetic", ["GBTR"]) == [
        "results/fingerprint/google-2011-usage/GBTR.csv"
    ]
    untargeted = copy.deepcopy(config)
    untargeted["calibration"]["targets"] = {}
    assert search_params(untargeted, "google-synthetic")["target"] == "Table 3"
    assert target_inputs(untargeted, "google-synthetic", ["GBTR"]) == []
    assert search_params(untargeted, "google-synthetic")["fingerprint"] != aimed["fingerprint"]
    # the target's own replay decides its rows, so it decides the search too
    moved = copy.deepcopy(config)
    moved["datasets"]["google-2011-usage"]["replay"]["checkpoint_interval"] = 300
    assert search_params(moved, "google-synthetic")["fingerprint"] != aimed["fingerprint"]
    # a method the search does not score does not decide its target's rows
    unscored = copy.deepcopy(config)
    unscored["methods"]["NURD"] = {"alpha": 0.0}
    assert search_params(unscored, "google-synthetic")["fingerprint"] == aimed["fingerprint"]
    scored = copy.deepcopy(config)
    scored["methods"]["KNN"] = {"n_neighbors": 7}
    assert search_params(scored, "google-synthetic")["fingerprint"] != aimed["fingerprint"]


def test_a_storage_of_another_config_is_refused(tmp_path):
    propose(tmp_path, 0)
    with pytest.raises(ValueError, match="another calibration config"):
        propose(tmp_path, 0, fingerprint="g")


def test_the_search_fingerprint_ignores_the_number_of_rounds():
    config = default_config()
    section, dataset = config["calibration"], config["datasets"]["google-synthetic"]
    section.setdefault("sampler_seed", 0)
    base = search_fingerprint(section, dataset, config["replay"])
    assert search_fingerprint({**section, "rounds": 99}, dataset, config["replay"]) == base
    assert search_fingerprint({**section, "seeds": [1]}, dataset, config["replay"]) != base


def test_a_datasets_own_knob_range_overrides_the_shared_one_and_is_checked():
    config = with_calibration(
        knobs={"signature_strength": {"low": 0.5, "high": 2.0}},
        dataset_knobs={
            "google-synthetic": {"median_task_duration_s": {"low": 300, "high": 4800, "log": True}}
        },
    )
    check_calibration(config)
    section = config["calibration"]
    assert dataset_knobs(section, "google-synthetic") == {
        "signature_strength": {"low": 0.5, "high": 2.0},
        "median_task_duration_s": {"low": 300, "high": 4800, "log": True},
    }
    assert dataset_knobs(section, "alibaba-synthetic") == section["knobs"]
    section["dataset_knobs"]["google-synthetic"]["median_task_duration_s"]["low"] = 0
    with pytest.raises(
        ValueError, match="calibration.dataset_knobs.google-synthetic.median_task_duration_s"
    ):
        check_calibration(config)


def test_check_seeds_must_be_fresh():
    for seeds in ([101], [DEFAULT_SEED]):
        with pytest.raises(ValueError, match="calibration.check_seeds"):
            check_calibration(with_calibration(check_seeds=seeds))


def test_the_check_table_gives_each_sets_distance_per_seed_and_over_the_seeds(tmp_path):
    def result(label, seed, calibration, validation):
        return {
            "dataset": "google-synthetic",
            "label": label,
            "seed": seed,
            "sets": {
                "calibration": {"distance": calibration, "rows": 11},
                "validation": {"distance": validation, "rows": 9 + seed % 2},
            },
        }

    results = [
        result("start", 103, 0.5, 0.4),
        result("start", 104, 0.7, 0.6),
        result("best", 103, 0.2, 0.3),
        result("best", 104, 0.3, 0.5),
    ]
    outs = {
        "out_csv": str(tmp_path / "check.csv"),
        "out_summary_csv": str(tmp_path / "summary.csv"),
        "out_md": str(tmp_path / "check.md"),
    }
    summary = check.write_check(results=results, **outs).set_index(["settings", "set"])
    assert summary.loc[("start", "calibration"), "mean"] == pytest.approx(0.6)
    assert summary.loc[("best", "validation"), "sd"] == pytest.approx(0.1 * 2**0.5)
    assert summary.loc[("best", "calibration"), ["min", "max"]].tolist() == [0.2, 0.3]
    assert summary.loc[("best", "validation"), "rows"] == 9  # the least over the seeds
    assert (summary["seeds"] == 2).all()
    assert len(pd.read_csv(outs["out_csv"])) == 8
    assert "seeds the search never used" in (tmp_path / "check.md").read_text()


def test_the_check_reads_the_searched_knobs_of_the_best_trial(tmp_path):
    best = tmp_path / "best.yaml"
    best.write_text(
        yaml.safe_dump(
            {
                "google-synthetic": {
                    "distance": 0.2,
                    "generator": {"n_jobs": 30, "signature_strength": 1.5, "feature_noise": 0.7},
                }
            }
        )
    )
    assert check.best_generator_settings(best, "google-synthetic", ["signature_strength"]) == {
        "signature_strength": 1.5
    }
    with pytest.raises(ValueError, match="no best trial for alibaba-synthetic"):
        check.best_generator_settings(best, "alibaba-synthetic", ["signature_strength"])


def test_the_check_scores_both_sets_on_one_seed():
    """A real check job's work on a tiny trace: every calibration- and validation-set method
    replayed under `protocol: paper`; each set's distance is the mean of its methods' rows."""
    config = default_config()
    params = check_params(config, "google-synthetic")
    result = check.check_trial(
        params=params,
        dataset="google-synthetic",
        # tasks of about two usage windows (the default's span ~13): the paper protocol replays
        # every window, and each set still has all its rows
        settings={"median_task_duration_s": 600, "job_duration_spread": 0.1},
        seed=7,
        n_jobs=2,
        paper_table=str(ROOT / "stragglers" / "data" / "paper_table3.csv"),
    )
    rows = pd.DataFrame.from_dict(result["methods"], orient="index")
    assert set(rows.index) == set(check.CHECK_SETS["calibration"]) | set(
        check.CHECK_SETS["validation"]
    )
    for name, members in check.CHECK_SETS.items():
        chosen = rows.loc[list(members)].dropna(subset=["TPR", "FPR"])
        expected = (
            (chosen["TPR"] - chosen["paper_TPR"]).abs()
            + (chosen["FPR"] - chosen["paper_FPR"]).abs()
        ).mean()
        assert result["sets"][name]["rows"] == len(chosen) == len(members)
        assert result["sets"][name]["distance"] == pytest.approx(expected)


def test_realism_marks_trials_no_further_from_the_real_rows_than_the_start():
    """Each trial's settings regenerate a trace; its latency-tail shape is compared with a
    reference (here a trace of the generator's defaults itself), and only trials no further
    than the starting settings are eligible: wider within-job spreads are not."""
    from stragglers.calibrate import realism

    reference = realism.trial_shape({}, {}, seeds=[3], n_jobs=4)
    trials = pd.DataFrame(
        {
            "dataset": "google-synthetic",
            "state": "COMPLETE",
            "round": [0, 0],
            "trial": [0, 1],
            "distance": [0.5, 0.4],
            "within_job_spread": [0.095, 0.4],
        }
    )
    table = realism.realism_table(
        trials, ["within_job_spread"], reference, base={}, seeds=[3], n_jobs=4
    ).set_index("trial")
    assert table.loc[0, "shape_distance"] == pytest.approx(0.0)
    assert table.loc[1, "shape_distance"] > 0.05
    assert table["eligible"].tolist() == [False, True]  # sorted by distance: trial 1 first
    # the same traces' flag-all rates, as `python -m stragglers.replay.reach` gives them
    with realism.generated_traces({"within_job_spread": 0.4}, {}, [3], 4) as folders:
        expected = reach.reach_summary(reach.reach_table(read_task_events(folders[3])))
    for key, column in realism.REACH_STATISTICS.items():
        assert table.loc[1, column] == pytest.approx(expected[key], nan_ok=True)


def test_how_a_methods_rates_follow_the_flag_all_rates_across_trials():
    """Spearman over the trials of each method's TPR (FPR) with the flag-all TPR (FPR); the
    paper's columns and the flag-all columns themselves are not methods."""
    from stragglers.calibrate import realism

    flag_all = [0.5, 0.7, 0.8, 0.95, 1.0]
    table = pd.DataFrame(
        {
            "flag_all_TPR": [1.0] * 5,
            "flag_all_FPR": flag_all,
            "HBOS_TPR": [0.9, 0.9, 0.95, 1.0, 1.0],
            "HBOS_FPR": [0.4, 0.5, 0.7, 0.9, 0.99],  # follows
            "HBOS_paper_FPR": [0.68] * 5,
            "GBTR_TPR": [0.1, 0.2, 0.3, 0.4, 0.5],
            "GBTR_FPR": [0.05, 0.04, 0.03, 0.02, 0.01],  # against
        }
    )
    follows = realism.follows_reach(table).set_index("method")
    assert list(follows.index) == ["GBTR", "HBOS"]
    assert follows.loc["HBOS", "spearman_FPR"] == pytest.approx(1.0)
    assert follows.loc["GBTR", "spearman_FPR"] == pytest.approx(-1.0)
    assert np.isnan(follows.loc["HBOS", "spearman_TPR"])  # a constant flag-all TPR


def tell_with_shapes(tmp_path, round_, proposals, shapes, tolerance=0.01, name="held.db"):
    return tell(tmp_path, round_, proposals, name=name, shapes=shapes, tolerance=tolerance)


def test_a_search_held_to_the_real_tails_never_chooses_an_infeasible_trial(tmp_path):
    """Trials whose tails are further from the real rows than the start's (plus the tolerance)
    are told as infeasible to the sampler and are never the best, whatever their distance."""
    import optuna

    from stragglers.calibrate import outputs

    def held_propose(round_):
        return propose(tmp_path, round_, name="held.db", out="held.json")

    first = held_propose(0)
    # the start (distance 1.0) keeps its tails; trial 1 is within the tolerance; trial 2 not
    shapes = [0.05, 0.055, 0.2]
    summary = tell_with_shapes(tmp_path, 0, first, shapes)
    study = optuna.load_study(
        study_name=search.STUDY_NAME, storage=f"sqlite:///{tmp_path / 'held.db'}"
    )
    by_index = {t.user_attrs["index"]: t for t in study.trials}
    assert by_index[0].user_attrs[search.REALISM_EXCESS] == pytest.approx(-0.01)
    assert by_index[1].user_attrs[search.REALISM_EXCESS] == pytest.approx(-0.005)
    assert by_index[2].user_attrs[search.REALISM_EXCESS] == pytest.approx(0.14)
    # the sampler's own record of the constraint (what the constrained TPE reads)
    assert by_index[2].constraints == {"realism": pytest.approx(0.14)}
    feasible = [abs(p["settings"]["signature_strength"] - 2.0) for p in first[:2]]
    assert summary["best_so_far"] == pytest.approx(min(feasible))
    # a later round reads the start's shape from the storage
    second = held_propose(1)
    tell_with_shapes(tmp_path, 1, second, [0.3, 0.3, 0.3])
    trials = outputs.read_trials("google-synthetic", tmp_path / "held.db", list(KNOBS))
    best = outputs.best_trials(trials)
    assert best["realism_excess"].iloc[0] <= 0
    assert best["distance"].iloc[0] == pytest.approx(min(feasible))
    rounds = outputs.rounds_table(trials)
    assert rounds["feasible"].tolist() == [2, 0]
    assert rounds["best_so_far"].tolist() == pytest.approx([min(feasible)] * 2)


def test_a_search_held_to_the_real_reach_needs_both_the_tails_and_the_reach(tmp_path):
    """With a reach tolerance, a trial is feasible only if its tails keep within theirs and its
    reach gap within the reach tolerance: the excess is the larger of the two."""
    from stragglers.calibrate import outputs

    first = propose(tmp_path, 0, name="reach.db", out="reach.json")
    # the start is far from the real reach (infeasible); trial 1 keeps both; trial 2 keeps the
    # reach but not the tails
    summary = tell(
        tmp_path,
        0,
        first,
        name="reach.db",
        shapes=[0.05, 0.055, 0.2],
        tolerance=0.01,
        reach_gaps=[0.15, 0.02, 0.0],
        reach_tolerance=0.05,
    )
    trials = outputs.read_trials("google-synthetic", tmp_path / "reach.db", list(KNOBS))
    by_trial = trials.set_index("trial")
    assert by_trial["reach_gap"].tolist() == pytest.approx([0.15, 0.02, 0.0])
    assert by_trial["realism_excess"].tolist() == pytest.approx([0.10, -0.005, 0.14])
    assert outputs.feasible(trials)["trial"].tolist() == [1]
    assert summary["best_so_far"] == pytest.approx(
        abs(first[1]["settings"]["signature_strength"] - 2.0)
    )
    second = propose(tmp_path, 1, name="reach.db", out="reach.json")
    with pytest.raises(ValueError, match="no reach_gap in its result"):
        tell(
            tmp_path,
            1,
            second,
            name="reach.db",
            shapes=[0.05] * 3,
            tolerance=0.01,
            reach_tolerance=0.05,
        )


def test_reach_gap_is_the_largest_gap_and_a_trial_without_results_is_far():
    from stragglers.calibrate.realism import reach_gap

    real = {"jobs with a scored checkpoint": 0.4, "flag-all FPR (mean over those jobs)": 0.8}
    near = {"jobs with a scored checkpoint": 0.45, "flag-all FPR (mean over those jobs)": 0.9}
    assert reach_gap(near, real) == pytest.approx(0.1)
    none = {"jobs with a scored checkpoint": 0.0, "flag-all FPR (mean over those jobs)": np.nan}
    assert reach_gap(none, real) == 1.0


def test_a_held_search_without_the_starts_shape_stops_naming_it(tmp_path):
    first = propose(tmp_path, 0, name="plain.db")
    tell(tmp_path, 0, first, name="plain.db")  # begun without the constraint
    second = propose(tmp_path, 1, name="plain.db")
    with pytest.raises(ValueError, match="starting trial .* has no shape_distance"):
        tell_with_shapes(tmp_path, 1, second, [0.1, 0.1, 0.1], name="plain.db")


def test_realism_settings_need_a_searched_google_dataset_and_a_file(tmp_path, caplog):
    from stragglers.calibrate.settings import realism_settings

    config = with_calibration(realism={"alibaba-synthetic": {"task_events": "x.csv.gz"}})
    with pytest.raises(ValueError, match="realism.alibaba-synthetic: the tails are measured"):
        check_calibration(config)
    # an entry of a dataset not searched is ignored (a config searching its own datasets)
    check_calibration(
        with_calibration(
            datasets=["alibaba-synthetic"],
            realism={"google-synthetic": {"task_events": "x.csv.gz"}},
        )
    )
    real = tmp_path / "part-00000-of-00500.csv.gz"
    real.write_bytes(b"")
    section = {"realism": {"google-synthetic": {"task_events": str(real)}}}
    assert realism_settings(section, "google-synthetic") == {
        "task_events": str(real),
        "n_jobs": 30,
        "tolerance": 0.0,
    }
    assert realism_settings(section, "alibaba-synthetic") is None
    # the reach constraint is recorded only when set (earlier searches keep their digest)
    section["realism"]["google-synthetic"]["reach_tolerance"] = 0.05
    assert realism_settings(section, "google-synthetic")["reach_tolerance"] == 0.05
    missing = {"realism": {"google-synthetic": {"task_events": str(tmp_path / "none.csv.gz")}}}
    assert realism_settings(missing, "google-synthetic") is None
    assert "without the realism constraint" in caplog.text


def test_a_trial_held_to_the_real_tails_reports_their_distance(tmp_path):
    """run_trial measures the settings' latency-tail shape against real task_events (here the
    generator's own trace, written as a Google trace on disk): distance 0 at equal settings."""
    from stragglers.calibrate.trial import run_trial
    from stragglers.traces.generate import GoogleGeneratorConfig, generate_google

    real = tmp_path / "real"
    generate_google(real, GoogleGeneratorConfig(n_jobs=3, seed=5))
    config = default_config()
    dataset = copy.deepcopy(config["datasets"]["google-synthetic"])
    dataset["generator"] = {}
    common = dict(
        dataset_name="google-synthetic",
        dataset=dataset,
        seeds=[5],
        n_jobs=3,
        methods=["GBTR"],
        method_params={},
        replay=config["replay"],
        paper_table=str(ROOT / "stragglers" / "data" / "paper_table3.csv"),
        workdir=str(tmp_path),
    )
    realism = {"task_events": str(real / "task_events"), "n_jobs": 3, "tolerance": 0.0}
    same = run_trial(settings={}, realism=realism, **common)
    assert same["shape_distance"] == pytest.approx(0.0)
    wider = run_trial(settings={"within_job_spread": 0.4}, realism=realism, **common)
    assert wider["shape_distance"] > 0.05
    assert run_trial(settings={}, **common)["shape_distance"] is None
    assert "reach_gap" not in same
    # held to the real reach too: the same settings reach as the "real" trace does
    held = run_trial(settings={}, realism={**realism, "reach_tolerance": 0.05}, **common)
    assert held["shape_distance"] == pytest.approx(0.0)
    assert held["reach_gap"] == pytest.approx(0.0)


def test_the_row_floor_is_each_rows_least_distance_over_the_feasible_trials():
    """Each row's least distance to the paper over the trials that keep the real tails, where it
    was reached, and the rows at the start and at the best; the `mean` row averages them."""
    from stragglers.calibrate import outputs

    def trial(round_, index, distance, excess, gbtr, pca):
        row = {
            "dataset": "google-synthetic",
            "round": round_,
            "trial": index,
            "number": 2 * round_ + index,
            "state": "COMPLETE",
            "distance": distance,
            "realism_excess": excess,
        }
        # paper GBTR 0.46 / 0.01, PCA 0.97 / 0.29 (hand-set here)
        for method, (tpr, fpr), paper in (
            ("GBTR", gbtr, (0.46, 0.01)),
            ("PCA", pca, (0.97, 0.29)),
        ):
            row.update(
                {
                    f"{method}_TPR": tpr,
                    f"{method}_FPR": fpr,
                    f"{method}_target_TPR": paper[0],
                    f"{method}_target_FPR": paper[1],
                }
            )
        return row

    trials = pd.DataFrame(
        [
            # the start: GBTR 0.36 + 0.09 = 0.45, PCA 0.03 + 0.61 = 0.64
            trial(0, 0, 0.545, -0.01, (0.10, 0.10), (1.00, 0.90)),
            # the best feasible trial: GBTR 0.26, PCA 0.21 -> 0.235
            trial(0, 1, 0.235, -0.005, (0.20, 0.01), (0.97, 0.50)),
            # infeasible: both rows exact, never counted
            trial(1, 0, 0.0, 0.2, (0.46, 0.01), (0.97, 0.29)),
            # feasible, GBTR close (0.05) but PCA far (0.71): 0.38
            trial(1, 1, 0.38, 0.0, (0.41, 0.01), (0.97, 1.00)),
        ]
    )
    table = outputs.row_floor_table(trials, ["GBTR", "PCA"]).set_index("method")
    assert table.loc["GBTR", "least"] == pytest.approx(0.05)
    assert (table.loc["GBTR", "round"], table.loc["GBTR", "trial"]) == (1, 1)
    assert table.loc["PCA", "least"] == pytest.approx(0.21)
    assert (table.loc["PCA", "round"], table.loc["PCA", "trial"]) == (0, 1)
    assert table.loc["GBTR", "at_start"] == pytest.approx(0.45)
    assert table.loc["PCA", "at_best"] == pytest.approx(0.21)
    assert table.loc["mean", "least"] == pytest.approx(0.13)
    assert table.loc["mean", "at_best"] == pytest.approx(0.235)
    assert table.loc["mean", "at_start"] == pytest.approx(0.545)
