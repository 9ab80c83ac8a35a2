"""Replicates and the sensitivity map: derived datasets, rank stability and who leads where,
checked on hand-made inputs whose answers are worked out by hand in the comments."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stragglers.report import sensitivity as report
from stragglers.rules.sensitivity import (
    check_sensitivity,
    derived_datasets,
    replicate_datasets,
    replicate_seed,
    sensitivity_datasets,
    sensitivity_target,
)

GOOGLE = {"kind": "google-2011", "source": "generate", "generator": {"n_jobs": 30}, "n_shards": 1}
LOCAL = {"kind": "google-2011-events", "source": "local", "raw_dir": "/nowhere", "n_shards": 1}
SENSITIVITY = {
    "base": "g",
    "n_jobs": 40,
    "signal": [{"signature_strength": s} for s in (0.0, 1.0, 2.0, 3.0)],
    "tail": [
        {"heavy_tail_job_fraction": 0.0},
        {"heavy_tail_job_fraction": 0.06},
        {"heavy_tail_job_fraction": 0.3, "heavy_tail_severity": 1.5},
    ],
    "methods": ["NURD", "GBTR"],
}


def config(**extra):
    return {"seed": 7, "datasets": {"g": GOOGLE, "real": LOCAL}, **extra}


def test_replicate_seeds_are_derived_deterministically_and_distinct():
    seeds = [replicate_seed(20220301, k) for k in range(1, 201)]
    assert seeds[0] == 20220301  # replicate 1 is the default run's data
    assert len(set(seeds)) == len(seeds)
    assert seeds == [replicate_seed(20220301, k) for k in range(1, 201)]
    # another config seed gives other replicates
    assert replicate_seed(20220302, 2) != replicate_seed(20220301, 2)
    with pytest.raises(ValueError, match="from 1"):
        replicate_seed(1, 0)


def test_replicate_datasets_regenerate_only_generated_datasets_with_their_own_seed():
    derived = replicate_datasets(config(replicates=3))
    assert sorted(derived) == ["g@r2", "g@r3"]  # "real" is not generated: no replicate
    assert derived["g@r2"]["generator"] == {"n_jobs": 30, "seed": replicate_seed(7, 2)}
    assert derived["g@r3"]["n_shards"] == 1
    assert replicate_datasets(config()) == {}  # default: one replicate, nothing added


def test_sensitivity_grid_is_signal_by_tail_with_the_base_seed():
    points = sensitivity_datasets(config(sensitivity=SENSITIVITY))
    assert len(points) == 12
    assert points["g@s1t3"]["generator"] == {
        "n_jobs": 40,
        "seed": 7,
        "signature_strength": 0.0,
        "heavy_tail_job_fraction": 0.3,
        "heavy_tail_severity": 1.5,
    }
    assert points["g@s4t1"]["generator"]["signature_strength"] == 3.0


def test_placed_dataset_without_its_folder_is_left_out(tmp_path):
    sensitivity = {**SENSITIVITY, "place": {"there": {**LOCAL, "raw_dir": str(tmp_path)}}}
    sensitivity["place"]["missing"] = LOCAL
    derived = derived_datasets(config(sensitivity=sensitivity))
    assert "there" in derived and "missing" not in derived


@pytest.mark.parametrize(
    "change, message",
    [
        ({"base": "real"}, "sensitivity.base: 'real' is not a generated dataset"),
        ({"methods": ["NURD", "Nope"]}, r"sensitivity.methods: \['Nope'\]"),
        ({"place": {"g": GOOGLE}}, "sensitivity.place.g: already a dataset"),
    ],
)
def test_bad_sensitivity_settings_are_named(change, message):
    with pytest.raises(ValueError, match=message):
        check_sensitivity(config(sensitivity={**SENSITIVITY, **change}), ["NURD", "GBTR"])


def test_a_run_without_the_base_dataset_loads_and_the_target_says_why():
    # e.g. the default config with its datasets replaced: the map is off, the run is not
    trimmed = {"seed": 7, "datasets": {"real": LOCAL}, "sensitivity": SENSITIVITY}
    check_sensitivity(trimmed, ["NURD", "GBTR"])  # no error: only a warning
    assert sensitivity_datasets(trimmed) == {} and derived_datasets(trimmed) == {}
    with pytest.raises(ValueError, match="sensitivity.base: 'g' is not a dataset of this run"):
        sensitivity_target(trimmed, ["results/tables/sensitivity.csv"])
    ok = config(sensitivity=SENSITIVITY)
    assert sensitivity_target(ok, ["x"]) == ["x"]


def job_metrics(values: dict[str, list[float]], privileged=("Oracle",), early=None):
    """Hand-made per-job metrics: method -> F1 per job (status ok)."""
    rows = []
    for method, f1s in values.items():
        for job, f1 in enumerate(f1s):
            rows.append(
                {
                    "dataset": "d",
                    "method": method,
                    "job_id": str(job),
                    "family": "Ours",
                    "privileged": method in privileged,
                    "status": "ok",
                    "TPR": f1,
                    "FPR": 0.1,
                    "FNR": 1 - f1,
                    "precision": f1,
                    "F1": f1,
                    "early_F1": (early or {}).get(method, f1s)[job],
                }
            )
    return pd.DataFrame(rows)


def test_rank_stability_by_hand():
    # replicate 1: A 0.5, B 0.4, C 0.3 -> ranks 1, 2, 3
    # replicate 2: A 0.3, B 0.6, C 0.3 -> B 1, A and C share rank 2
    # replicate 3: A 0.7, B 0.7, C 0.1 -> A and B share rank 1, C 3
    # Oracle (privileged) is best everywhere but never ranked
    by_replicate = {
        1: {"A": 0.5, "B": 0.4, "C": 0.3, "Oracle": 1.0},
        2: {"A": 0.3, "B": 0.6, "C": 0.3, "Oracle": 1.0},
        3: {"A": 0.7, "B": 0.7, "C": 0.1, "Oracle": 1.0},
    }
    summaries = pd.concat(
        [
            report.replicate_summary(
                job_metrics({m: [f1, f1] for m, f1 in values.items()}), "d", replicate
            )
            for replicate, values in by_replicate.items()
        ],
        ignore_index=True,
    )
    table = report.replicate_table(summaries).set_index("method")
    assert table.loc["A", ["rank_r1", "rank_r2", "rank_r3"]].tolist() == [1, 2, 1]
    assert table.loc["B", ["rank_r1", "rank_r2", "rank_r3"]].tolist() == [2, 1, 1]
    assert table.loc["C", ["rank_r1", "rank_r2", "rank_r3"]].tolist() == [3, 2, 3]
    assert table["times_best"].to_dict() == {"A": 2, "B": 2, "C": 0, "Oracle": 0}
    assert table.loc["A", "F1_mean"] == pytest.approx(0.5)
    assert table.loc["A", "F1_sd"] == pytest.approx(0.2)  # sd of 0.5, 0.3, 0.7 (ddof 1)
    assert (table.loc["C", "F1_min"], table.loc["C", "F1_max"]) == (0.1, 0.3)
    assert np.isnan(table.loc["Oracle", "mean_rank"])
    assert "| A |" in report.replicate_markdown(table.reset_index())


POLICIES = pd.DataFrame(
    [
        {
            "method": m,
            "policy": p,
            "machines": "unlimited",
            "reduction": r,
            "reduction_lo": r - 0.1,
            "reduction_hi": r + 0.1,
        }
        for m, r in (("A", 0.3), ("B", 0.2), ("C", 0.25), ("Oracle", 0.5))
        for p in ("relaunch", "resume")
    ]
)
BOOTSTRAP = {"n_resamples": 999, "confidence_level": 0.95, "method": "percentile"}


def test_who_leads_where_by_hand():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.4, 0.6, 40)
    metrics = job_metrics(
        {
            "A": list(base + 0.2),  # A beats B by 0.2 on every job: not tied
            "B": list(base),
            "C": list(base + 0.2 + rng.normal(0, 0.01, 40)),  # A + noise: tied
            "Oracle": [1.0] * 40,
        }
    )
    table, leaders = report.point_table("p", metrics, POLICIES, seed=1, bootstrap=BOOTSTRAP)
    f1 = leaders.set_index("metric").loc["F1"]
    assert f1["leader"] in {"A", "C"} and f1["n_tied"] == 1
    other = ({"A", "C"} - {f1["leader"]}).pop()
    assert f1["tied"] == other
    table = table.set_index("method")
    assert not table.loc["B", "tied_F1"] and table.loc[other, "tied_F1"]
    assert table.loc["A", "jct_resume"] == 0.3 and table.loc[
        "B", "jct_relaunch_lo"
    ] == pytest.approx(0.1)
    # the interval of B's F1 covers its mean; the same seed gives the same table
    assert table.loc["B", "F1_lo"] < base.mean() < table.loc["B", "F1_hi"]
    again, _ = report.point_table("p", metrics, POLICIES, seed=1, bootstrap=BOOTSTRAP)
    pd.testing.assert_frame_equal(table, again.set_index("method"))


def test_the_map_places_every_point_and_dataset(tmp_path):
    rng = np.random.default_rng(1)
    points, metrics, policies, measured = {}, {}, {}, {}
    for signal, shift in ((1, 0.0), (2, 0.3)):  # at signal 2, B overtakes A
        name = f"g@s{signal}t1"
        points[name] = {"signal": signal, "tail": 1, "settings": {"signature_strength": signal}}
        base = rng.uniform(0.3, 0.5, 30)
        frame = job_metrics({"A": list(base + 0.1), "B": list(base + shift), "Oracle": [1.0] * 30})
        paper = job_metrics({"A (paper)": list(base)})
        metrics[name] = pd.concat([frame, paper], ignore_index=True)
        policies[name] = POLICIES
        measured[name] = {"spearman": 0.2 * signal, "auc": 0.6, "tail": 1.2}
    table, leaders = report.sensitivity_table(
        points, metrics, policies, measured, seed=3, bootstrap=BOOTSTRAP
    )
    f1 = leaders[leaders["metric"] == "F1"].set_index("point")["leader"].to_dict()
    assert f1 == {"g@s1t1": "A", "g@s2t1": "B"}
    paper = table[table["protocol"] == "paper"]
    assert paper["method"].tolist() == ["A (paper)"] * 2 and paper["jct_resume"].isna().all()
    assert table.loc[table["point"] == "g@s2t1", "spearman"].eq(0.4).all()
    placed = {"google-synthetic": {"spearman": 0.3, "auc": 0.7, "tail": 1.1}}
    text = report.sensitivity_markdown(table, leaders, placed)
    assert "## Who leads where" in text and "| google-synthetic | 0.300 |" in text
    report.plot_sensitivity(table, placed, str(tmp_path / "map.png"))
    assert (tmp_path / "map.png").stat().st_size > 10_000


def test_crossover_and_resume_counts_by_hand():
    # tail 1: NURD behind, top, top at spearman 0.1, 0.2, 0.3 -> crossover 0.2
    # tail 2: NURD top, behind at 0.1, 0.2 -> no crossover (behind at the most predictable)
    table = pd.DataFrame(
        {
            "point": ["a", "b", "c", "d", "e"],
            "tail": [1, 1, 1, 2, 2],
            "spearman": [0.1, 0.2, 0.3, 0.1, 0.2],
            "method": "NURD",
            "protocol": "configured",
            "leads_F1": [False, True, False, True, False],
            "tied_F1": [False, False, True, False, False],
            "jct_relaunch": [0.1, 0.2, 0.3, 0.1, 0.2],
            "jct_relaunch_hi": [0.15, 0.25, 0.35, 0.15, 0.25],
            "jct_resume": [0.2, 0.1, 0.4, 0.3, 0.2],
            "jct_resume_lo": [0.16, 0.05, 0.3, 0.2, 0.1],
        }
    )
    result = report.crossovers(table).set_index("tail")
    assert result.loc[1, "crossover_spearman"] == 0.2 and result.loc[1, "top_points"] == "b, c"
    assert np.isnan(result.loc[2, "crossover_spearman"])
    resume = report.resume_versus_relaunch(table).iloc[0]
    # resume > relaunch at a, c, d; intervals apart at a (0.16 > 0.15) and d (0.2 > 0.15)
    assert (resume["resume_better"], resume["resume_better_intervals_apart"]) == (3, 2)
    assert resume["mean_difference"] == pytest.approx(0.06)
