"""Bootstrap intervals over jobs and paired comparisons (stragglers/evaluate/bootstrap.py),
checked against known means, hand-computed cases and plain pandas, and their place in Table 3
and the policies table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stragglers.evaluate import bootstrap as boot
from stragglers.report import tables as rp

B = 999  # resamples in the hand-computed cases: p = 2 / (B + 1) = 0.002 exactly


def job_metrics_frame(
    per_method: dict[str, list[float]],
    dataset="d",
    privileged=(),
    early: dict[str, list[float]] | None = None,
) -> pd.DataFrame:
    """Job metrics rows (status ok) with the given per-job F1; TPR = F1, FPR = 1 - F1."""
    rows = []
    for method, values in per_method.items():
        for i, f1 in enumerate(values):
            rows.append(
                {
                    "dataset": dataset,
                    "method": method,
                    "family": "Reference" if method in privileged else "F",
                    "privileged": method in privileged,
                    "job_id": f"j{i:02d}",
                    "status": "ok",
                    "F1": f1,
                    "TPR": f1,
                    "FPR": 1 - f1,
                    "early_F1": (early or per_method)[method][i],
                }
            )
    return pd.DataFrame(rows)


def summary_of(metrics: pd.DataFrame) -> pd.DataFrame:
    return (
        metrics.groupby(["dataset", "method"], sort=False)
        .agg(
            family=("family", "first"),
            privileged=("privileged", "first"),
            F1=("F1", "mean"),
            early_F1=("early_F1", "mean"),
        )
        .reset_index()
    )


# ---------------------------------------------------------------------------------------
# intervals


def test_interval_covers_a_known_mean_about_95_percent_of_the_time():
    """300 samples of 30 jobs from Beta(2, 5) (mean 2/7, skewed like per-job F1): the 95 %
    interval covers the true mean in roughly 95 % of them."""
    rng = np.random.default_rng(12345)
    true_mean = 2 / 7
    covered = []
    for i in range(300):
        sample = rng.beta(2, 5, size=30)
        low, high, notes, _ = boot.bootstrap_jobs(
            len(sample),
            boot.mean_statistic(sample),
            1,
            rng=boot.rng_for(7, "coverage", i),
            n_resamples=500,
        )
        assert notes == [""]
        covered.append(low[0] <= true_mean <= high[0])
    coverage = np.mean(covered)
    # binomial sd at 300 draws: 1.3 points; the percentile interval runs slightly narrow
    assert 0.89 <= coverage <= 0.99, coverage


def test_one_job_no_job_and_a_constant_sample():
    low, high, notes, dist = boot.bootstrap_jobs(
        1, boot.mean_statistic([0.5]), 1, rng=boot.rng_for(1, "x")
    )
    assert np.isnan(low[0]) and np.isnan(high[0]) and dist is None
    assert notes == ["one scored job: no interval"]
    low, high, notes, _ = boot.bootstrap_jobs(
        0, boot.mean_statistic(np.zeros((0, 1))), 1, rng=boot.rng_for(1, "x")
    )
    assert np.isnan(low[0]) and notes == ["no scored job"]
    for method in boot.INTERVAL_METHODS:  # BCa alone would give NaN here
        low, high, notes, _ = boot.bootstrap_jobs(
            5, boot.mean_statistic(np.ones(5)), 1, rng=boot.rng_for(1, "x"), method=method
        )
        assert (low[0], high[0], notes) == (1.0, 1.0, [""])


def test_bad_settings_raise():
    with pytest.raises(ValueError, match="resamples"):
        boot.check_settings(1, 0.95, "percentile")
    with pytest.raises(ValueError, match="confidence"):
        boot.check_settings(100, 1.0, "percentile")
    with pytest.raises(ValueError, match="method"):
        boot.check_settings(100, 0.95, "studentized")


def test_pooled_median_matches_pandas_on_the_pooled_resample():
    rng = np.random.default_rng(3)
    leads = np.round(rng.random(40), 1)  # ties on purpose
    lead_job = rng.integers(0, 7, 40)
    statistic = boot.pooled_median_statistic(leads, lead_job, 8)  # job 7 has no lead
    positions = rng.integers(0, 8, (25, 8))
    positions[0] = 7  # a resample of the lead-less job alone: undefined
    expected = [
        pd.Series(np.concatenate([leads[lead_job == j] for j in row])).median() for row in positions
    ]
    np.testing.assert_allclose(statistic(positions)[0], expected, equal_nan=True)
    assert statistic(np.arange(8))[0] == pytest.approx(np.median(leads))


def lead_case():
    metrics = job_metrics_frame(
        {"A": [0.2, 0.4, 0.6, 0.8, 1.0, 0.5], "B": [0.1, 0.1, 0.3, 0.2, 0.9, 0.4]}
    )
    metrics["median_lead"] = 0.5
    metrics.loc[4, "FPR"] = np.nan  # a job whose scored tasks are all stragglers
    extra = metrics.iloc[[0]].assign(job_id="failed", status="failed", F1=np.nan)
    metrics = pd.concat([metrics, extra], ignore_index=True)
    rng = np.random.default_rng(0)
    leads = pd.DataFrame(
        {
            "dataset": "d",
            "method": rng.choice(["A", "B"], 60),
            "job_id": [f"j{i:02d}" for i in rng.integers(0, 6, 60)],
            "lead": rng.random(60),
        }
    )
    return metrics, leads


def test_table3_intervals_are_deterministic_and_ignore_row_order():
    metrics, leads = lead_case()
    first = boot.table3_intervals(metrics, leads, seed=5, n_resamples=400)
    again = boot.table3_intervals(metrics, leads, seed=5, n_resamples=400)
    pd.testing.assert_frame_equal(first, again)
    shuffled = boot.table3_intervals(
        metrics.sample(frac=1, random_state=1),
        leads.sample(frac=1, random_state=2),
        seed=5,
        n_resamples=400,
    )
    pd.testing.assert_frame_equal(
        first, shuffled.set_index("method").loc[first["method"]].reset_index()[first.columns]
    )
    other_seed = boot.table3_intervals(metrics, leads, seed=6, n_resamples=400)
    assert not first["F1_lo"].equals(other_seed["F1_lo"])
    assert list(first.columns) == [
        "dataset",
        "method",
        "F1_lo",
        "F1_hi",
        "TPR_lo",
        "TPR_hi",
        "FPR_lo",
        "FPR_hi",
        "early_F1_lo",
        "early_F1_hi",
        "median_lead_lo",
        "median_lead_hi",
        "interval_note",
    ]
    row = first.set_index("method").loc["A"]
    f1 = np.array([0.2, 0.4, 0.6, 0.8, 1.0, 0.5])
    assert row["F1_lo"] < f1.mean() < row["F1_hi"]
    assert f1.min() <= row["F1_lo"] and row["F1_hi"] <= f1.max()


def test_table3_intervals_edge_cases_give_nan_with_a_reason():
    metrics = job_metrics_frame({"One": [0.5], "Const": [1.0, 1.0, 1.0]})
    metrics["median_lead"] = np.nan
    leads = pd.DataFrame({"dataset": "d", "method": ["Const"], "job_id": ["j00"], "lead": [0.3]})
    out = boot.table3_intervals(metrics, leads, seed=1, n_resamples=300).set_index("method")
    assert out.loc["One", ["F1_lo", "F1_hi", "median_lead_lo"]].isna().all()
    assert out.loc["One", "interval_note"] == "one scored job: no interval"
    assert (out.loc["Const", "F1_lo"], out.loc["Const", "F1_hi"]) == (1.0, 1.0)
    # one of three jobs has the only lead: some resamples have none
    assert np.isnan(out.loc["Const", "median_lead_lo"])
    assert out.loc["Const", "interval_note"].startswith("median_lead: undefined in")
    assert out.loc["Const", "interval_note"].endswith("no interval")


def test_median_lead_undefined_in_a_few_resamples_leaves_them_out():
    """Ten jobs, leads in four: a resample draws none of them with probability
    0.6^10 = 0.6 %, under the 1 % limit: those resamples are left out, with a note."""
    metrics = job_metrics_frame({"M": [0.5, 0.6] * 5})
    metrics["median_lead"] = 0.4
    leads = pd.DataFrame(
        {
            "dataset": "d",
            "method": "M",
            "job_id": ["j00", "j01", "j02", "j03"] * 2,
            "lead": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
        }
    )
    out = boot.table3_intervals(metrics, leads, seed=1, n_resamples=4000).iloc[0]
    note = out["interval_note"]
    assert note.startswith("median_lead: undefined in") and note.endswith("left out"), note
    share = float(note.split("undefined in ")[1].split("%")[0]) / 100
    assert 0.002 < share < 0.01  # 0.6 % expected
    assert 0.1 <= out["median_lead_lo"] < 0.45 < out["median_lead_hi"] <= 0.8


# ---------------------------------------------------------------------------------------
# paired comparisons


def test_a_method_against_itself_is_exactly_zero():
    values = pd.Series(np.random.default_rng(1).random(20), index=[f"j{i}" for i in range(20)])
    result = boot.paired_difference(values, values, rng=boot.rng_for(1, "self"))
    assert (result["diff"], result["diff_lo"], result["diff_hi"]) == (0.0, 0.0, 0.0)
    assert result["p_value"] == 1.0 and result["note"] == ""


def test_paired_difference_uses_only_common_jobs_and_the_same_resamples():
    a = pd.Series([0.5, 0.7, 0.9, np.nan], index=["j1", "j2", "j3", "j4"])
    b = pd.Series([0.4, 0.6, np.nan, 0.1], index=["j2", "j1", "j3", "j4"])
    result = boot.paired_difference(a, b, rng=boot.rng_for(1, "p"), n_resamples=B)
    assert result["n_jobs"] == 2  # j1 and j2
    assert result["diff"] == pytest.approx(((0.5 - 0.6) + (0.7 - 0.4)) / 2)
    # paired: each resample is a mix of the two job differences -0.1 and +0.3
    assert result["diff_lo"] >= -0.1 - 1e-12 and result["diff_hi"] <= 0.3 + 1e-12
    one = boot.paired_difference(a, b.drop("j2"), rng=boot.rng_for(1, "p"))
    assert np.isnan(one["diff_lo"]) and one["note"] == "one job scored by both: no interval"


def test_holm_by_hand():
    adjusted = boot.holm([0.01, 0.04, np.nan, 0.03])
    # sorted 0.01, 0.03, 0.04 with m = 3: 3 x 0.01, max(0.03, 2 x 0.03), max(0.06, 1 x 0.04)
    np.testing.assert_allclose(adjusted, [0.03, 0.06, np.nan, 0.06])
    assert boot.bootstrap_p_value(np.zeros(9)) == 1.0
    assert boot.bootstrap_p_value(np.full(B, -0.5)) == pytest.approx(2 / (B + 1))
    assert boot.bootstrap_p_value(np.array([-1.0, 1, 2, 3])) == pytest.approx(2 * 2 / 5)


def tie_case():
    """Ten jobs. A: F1 0.75 everywhere (the best non-privileged). T: 1.0 / 0.5 alternating
    (differences from A +/-0.25, mean 0). L: 0.25 everywhere (difference -0.5 on every job).
    Oracle (privileged) 1.0. Early-F1: L is the best (0.875), A and T 0.125 below on every
    job. Binary fractions, so every resampled mean is exact."""
    a = [0.75] * 10
    t = [1.0, 0.5] * 5
    low = [0.25] * 10
    early = {"A": [0.75] * 10, "T": [0.75] * 10, "L": [0.875] * 10, "Oracle": [1.0] * 10}
    return job_metrics_frame(
        {"A": a, "T": t, "L": low, "Oracle": [1.0] * 10}, privileged=("Oracle",), early=early
    )


def test_tie_mark_hand_computed():
    """F1 family {T, L} (m = 2) against A: L's difference is -0.5 in every resample, so
    p = 2 / (B + 1) and Holm gives 2 p = 0.004 < 0.05: not tied. T's resampled mean
    difference is <= 0 when at most 5 of the 10 drawn jobs are +0.25 ones, with probability
    P(Bin(10, 1/2) <= 5) = 638 / 1024 > 1/2, and >= 0 likewise, so p = min(1, 2 x ...) = 1
    and p_holm = 1: tied. The Oracle is outside the family."""
    metrics = tie_case()
    table = boot.paired_comparisons(metrics, summary_of(metrics), seed=3, n_resamples=B, nurd="T")
    f1 = table[(table["metric"] == "F1") & (table["reference_kind"] == "best")]
    f1 = f1.set_index("method")
    assert set(f1["reference"]) == {"A"} and set(f1.index) == {"T", "L", "Oracle"}
    assert f1.loc["L", "diff"] == pytest.approx(-0.5)
    assert (f1.loc["L", "diff_lo"], f1.loc["L", "diff_hi"]) == pytest.approx((-0.5, -0.5))
    assert f1.loc["L", "p_value"] == pytest.approx(2 / (B + 1))
    assert f1.loc["L", "p_holm"] == pytest.approx(4 / (B + 1))
    assert not f1.loc["L", "tied"]
    assert f1.loc["T", "diff"] == pytest.approx(0.0)
    assert f1.loc["T", "p_value"] == 1.0 and f1.loc["T", "p_holm"] == 1.0
    assert f1.loc["T", "tied"]
    assert pd.isna(f1.loc["Oracle", "tied"]) and pd.isna(f1.loc["Oracle", "p_holm"])
    assert f1.loc["Oracle", "note"] == "privileged: outside the Holm family"
    # early-F1 has its own best (L), and NURD (here T) its own rows
    early = table[(table["metric"] == "early_F1") & (table["reference_kind"] == "best")]
    assert set(early["reference"]) == {"L"}
    assert not early.set_index("method").loc[["A", "T"], "tied"].any()
    against_nurd = table[(table["reference_kind"] == "NURD") & (table["metric"] == "F1")]
    assert set(against_nurd["method"]) == {"A", "L", "Oracle"}
    marks = boot.tie_marks(table)
    assert marks == {("d", "F1", "T"): True}


def test_table3_markdown_shows_intervals_and_tie_marks_csv_keeps_its_columns(tmp_path):
    metrics = tie_case()
    summary = summary_of(metrics).assign(
        jobs_evaluated=10,
        jobs_failed=0,
        jobs_unscorable=0,
        TPR=lambda f: f["F1"],
        FPR=lambda f: 1 - f["F1"],
        FNR=lambda f: 1 - f["F1"],
    )
    plain = rp.write_table3(summary, tmp_path / "plain.csv", tmp_path / "plain.md")
    intervals = boot.table3_intervals(metrics, None, seed=3, n_resamples=B)
    ties = boot.tie_marks(
        boot.paired_comparisons(metrics, summary_of(metrics), seed=3, n_resamples=B)
    )
    rp.write_table3(
        summary, tmp_path / "t3.csv", tmp_path / "t3.md", intervals=intervals, ties=ties
    )
    plain_csv = pd.read_csv(tmp_path / "plain.csv")
    with_ci = pd.read_csv(tmp_path / "t3.csv")
    # the existing columns: same values, same positions; the new ones after them
    pd.testing.assert_frame_equal(with_ci.iloc[:, : plain_csv.shape[1]], plain_csv)
    assert list(with_ci.columns[plain_csv.shape[1] :]) == [
        "F1_lo",
        "F1_hi",
        "TPR_lo",
        "TPR_hi",
        "FPR_lo",
        "FPR_hi",
        "early_F1_lo",
        "early_F1_hi",
        "interval_note",
    ]
    assert len(plain) == len(with_ci)
    text = (tmp_path / "t3.md").read_text()
    t_row = next(line for line in text.splitlines() if "| T |" in line)
    low, high = intervals.set_index("method").loc["T", ["F1_lo", "F1_hi"]]
    # T's mean equals A's, so it is bold too (ties at the shown precision), and tied
    assert f"**0.75** [{low:.2f}, {high:.2f}] {rp.TIE_MARK}" in t_row
    a_row = next(line for line in text.splitlines() if "| A |" in line)
    assert "**0.75** [0.75, 0.75]" in a_row and rp.TIE_MARK not in a_row
    l_row = next(line for line in text.splitlines() if "| L |" in line)
    assert rp.TIE_MARK not in l_row.split("|")[6]  # F1 cell of L: not tied
    assert "bootstrap interval" in text and "tied with the best" in text


# ---------------------------------------------------------------------------------------
# policies


def test_reduction_intervals_per_policy_and_hadoop_ns():
    from stragglers.report.simulation import reduction_intervals
    from stragglers.simulate import policies

    rng = np.random.default_rng(4)
    rows = []
    for job in range(8):
        for policy in policies.POLICIES:
            for machines in (pd.NA, 100):
                for repeat in range(2):
                    rows.append(
                        {
                            "dataset": "d",
                            "method": "M",
                            "job_id": f"j{job}",
                            "policy": policy,
                            "machines": machines,
                            "repeat": repeat,
                            "jct_base": 100.0,
                            "jct_mitigated": 90.0,
                            "reduction": rng.normal(0.1, 0.05),
                            "jct_reference": 80.0,
                            "machine_time_base": 10.0,
                            "machine_time": 11.0,
                        }
                    )
    frame = pd.DataFrame(rows)
    frame["machines"] = frame["machines"].astype("Int64")
    table = policies.pocd_summary(frame, [1.0])
    intervals = reduction_intervals(
        frame, dataset="d", seed=2, bootstrap={"bootstrap_resamples": 500}
    )
    merged = table.merge(intervals, on=["method", "policy", "machines"], validate="1:1")
    assert len(merged) == len(table)
    base = merged[merged["method"] == "Hadoop-NS"].iloc[0]
    assert (base["reduction_lo"], base["reduction_hi"]) == (0.0, 0.0)
    mitigated = merged[merged["method"] == "M"]
    assert (
        (mitigated["reduction_lo"] < mitigated["reduction"])
        & (mitigated["reduction"] < mitigated["reduction_hi"])
    ).all()
    # one policy's interval is the plain bootstrap of its per-job means
    per_job = (
        frame[(frame["policy"] == "relaunch") & frame["machines"].isna()]
        .groupby("job_id")["reduction"]
        .mean()
        .sort_index()
    )
    low, high, _, _ = boot.bootstrap_jobs(
        len(per_job),
        boot.mean_statistic(per_job.to_numpy()),
        1,
        rng=boot.rng_for(2, "policies", "d", "M"),
        n_resamples=500,
    )
    row = mitigated[
        (mitigated["policy"] == "relaunch") & (mitigated["machines"] == "unlimited")
    ].iloc[0]
    # all rows of a method share one resampling, so the same draws give the same interval
    assert (row["reduction_lo"], row["reduction_hi"]) == pytest.approx((low[0], high[0]))


def test_a_method_that_failed_on_every_job_gets_reasons_not_errors():
    metrics = job_metrics_frame({"A": [0.5, 0.75, 1.0], "Fails": [0.5, 0.5, 0.5]})
    failed = metrics["method"] == "Fails"
    metrics.loc[failed, "status"] = "failed"
    metrics.loc[failed, ["F1", "TPR", "FPR", "early_F1"]] = np.nan
    metrics["median_lead"] = np.nan
    out = boot.table3_intervals(
        metrics, metrics.iloc[:0].assign(lead=[]), seed=1, n_resamples=200
    ).set_index("method")
    assert out.loc["Fails", "interval_note"] == "no scored job"
    assert out.loc["Fails", ["F1_lo", "F1_hi"]].isna().all()
    summary = summary_of(metrics)
    table = boot.paired_comparisons(metrics, summary, seed=1, n_resamples=200)
    row = table[(table["method"] == "Fails") & (table["metric"] == "F1")].iloc[0]
    assert row["reference"] == "A" and row["n_jobs"] == 0 and np.isnan(row["diff_lo"])
    assert row["note"] == "no job scored by both" and pd.isna(row["tied"])
