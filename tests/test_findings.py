"""results/findings.md: its sentences against tables made here (values chosen by hand), and
the check that every quoted number is what its table holds."""

import pandas as pd
import pytest

from stragglers.report import findings

DATASET = "toy"


def _tables(tmp_path):
    table3 = pd.DataFrame(
        {
            "dataset": DATASET,
            "method": ["NURD", "LOF", "GBTR", "Oracle"],
            "privileged": [False, False, False, True],
            "F1": [0.45, 0.52, 0.31, 0.9],
            "early_F1": [0.40, 0.20, 0.35, 0.8],
            "F1_lo": [0.40, 0.47, 0.25, 0.85],
            "F1_hi": [0.50, 0.58, 0.37, 0.95],
            "early_F1_lo": [0.33, 0.15, 0.30, 0.7],
            "early_F1_hi": [0.47, 0.26, 0.41, 0.9],
        }
    )
    paired = pd.DataFrame(
        {
            "dataset": DATASET,
            "metric": ["F1", "F1", "early_F1", "early_F1"],
            "reference_kind": "best",
            "reference": ["LOF", "LOF", "NURD", "NURD"],
            "method": ["NURD", "GBTR", "GBTR", "LOF"],
            "diff": [-0.07, -0.21, -0.05, -0.2],
            "diff_lo": [-0.12, -0.3, -0.1, -0.3],
            "diff_hi": [0.01, -0.1, 0.02, -0.1],
            "tied": [True, False, True, False],
        }
    )
    completion = pd.DataFrame(
        {"dataset": DATASET, "method": ["NURD", "Oracle"], "reduction_unlimited": [0.02, 0.11]}
    )
    policies = pd.DataFrame(
        {
            "dataset": DATASET,
            "method": ["Hadoop-NS", "NURD", "NURD", "Oracle", "Oracle", "NURD"],
            "policy": ["none", "relaunch", "copy", "relaunch", "copy", "copy"],
            "machines": ["unlimited"] * 5 + ["100"],
            "reduction": [0.0, -0.04, 0.06, 0.12, 0.15, 0.05],
            "reduction_lo": [0.0, -0.08, 0.03, 0.09, 0.12, 0.02],
            "reduction_hi": [0.0, 0.0, 0.09, 0.15, 0.18, 0.08],
            "machine_time_rel": [1.0, 1.01, 1.2, 1.05, 1.3, 1.1],
        }
    )
    paths = {}
    for name, frame in [
        ("table3", table3),
        ("paired", paired),
        ("completion", completion),
        ("policies", policies),
    ]:
        paths[name] = str(tmp_path / f"{name}.csv")
        frame.to_csv(paths[name], index=False)
    return paths


def _write(tmp_path, paths, audit=None, **tables):
    """The page and its sources, with `tables` (e.g. fingerprint files) passed on."""
    out_md, out_sources = tmp_path / "findings.md", tmp_path / "findings.sources.csv"
    findings.write_findings(
        **paths,
        **tables,
        audit=audit,
        datasets=[DATASET],
        protocol="causal",
        config_name="config/config.yaml",
        out_md=str(out_md),
        out_sources=str(out_sources),
    )
    return out_md.read_text(), pd.read_csv(out_sources, dtype=str)


def test_findings_sentences(tmp_path):
    page, _ = _write(tmp_path, _tables(tmp_path))
    # by hand: LOF has the highest non-privileged F1 (the Oracle is privileged), NURD the
    # highest early-F1; NURD is second of three by F1
    assert "Best online method by F1: **LOF**, 0.520 [0.470, 0.580]" in page
    assert "statistically tied with it (paired comparisons, Holm): NURD." in page
    assert "Best online method by early-F1: **NURD**, 0.400 [0.330, 0.470]" in page
    assert "tied with it (paired comparisons, Holm): GBTR." in page
    assert "NURD ranks 2 of 3 online methods by F1, with 0.450 [0.400, 0.500]" in page
    assert "differs by -0.070 [-0.120, 0.010]" in page
    assert "The Oracle (privileged: it sees every task's latency) scores F1 0.900" in page
    assert (
        "The Oracle's flags change the mean job completion time by (reduction, positive = faster): "
        "kill-and-relaunch (Algorithm 2, unlimited machines) 0.110; relaunch 0.120 "
        "[0.090, 0.150] (machine time x 1.050); copy 0.150 [0.120, 0.180] (machine time x 1.300)."
    ) in page
    # the 100-machine row and the no-mitigation baseline are not quoted
    assert "0.050" not in page and "Hadoop-NS" not in page


def test_findings_numbers_match_their_tables(tmp_path):
    paths = _tables(tmp_path)
    page, sources = _write(tmp_path, paths)
    assert len(sources) > 20
    assert findings.verify_findings(page, sources) == []


def test_verify_catches_a_stale_or_unsourced_number(tmp_path):
    paths = _tables(tmp_path)
    page, sources = _write(tmp_path, paths)
    table3 = pd.read_csv(paths["table3"])
    table3.loc[table3["method"] == "LOF", "F1"] = 0.53  # the table changed after the page
    table3.to_csv(paths["table3"], index=False)
    problems = findings.verify_findings(page + "\nAlso 0.777.\n", sources)
    assert any("F1 is 0.530, the page says 0.520" in p for p in problems), problems
    assert any("0.777" in p for p in problems), problems


def test_audit_largest_step(tmp_path):
    paths = _tables(tmp_path)
    audit = pd.DataFrame(
        {
            "dataset": DATASET,
            "path": ["cumulative"] * 3 + ["alone"],
            "step": [0, 1, 2, 1],
            "change": ["paper", "no pruning", "wall clock", "no pruning"],
            "method": "NURD (ladder)",
            "F1": [0.8, 0.75, 0.5, 0.1],
        }
    )
    audit_path = str(tmp_path / "audit.csv")
    audit.to_csv(audit_path, index=False)
    page, sources = _write(tmp_path, paths, audit=audit_path)
    # by hand: steps 0->1 change F1 by -0.05, 1->2 by -0.25 (the 'alone' row is not a step)
    assert "the largest step of F1 is step 2 (wall clock), from 0.750 to 0.500." in page
    assert findings.verify_findings(page, sources) == []


def test_missing_row_is_an_error():
    with pytest.raises(ValueError, match="0 rows match"):
        findings.Sources().quote(
            pd.DataFrame({"method": ["A"], "F1": [0.1]}), "t.csv", {"method": "B"}, "F1"
        )


def test_findings_quote_the_fingerprint_distances(tmp_path):
    paths = _tables(tmp_path)
    distances = pd.DataFrame(
        {
            "dataset": DATASET,
            "protocol": "causal",
            "set": ["calibration", "validation", "held-out"],
            "distance": [0.4125, float("nan"), 0.25],
            "rows": [11, 0, 2],
            "of": [11, 10, 2],
        }
    )
    distances.to_csv(tmp_path / "fingerprint_distances.csv", index=False)
    page, sources = _write(tmp_path, paths, fingerprint=str(tmp_path / "fingerprint_distances.csv"))
    # the validation set has no scored row: not quoted
    assert (
        "|FPR - paper FPR|; NURD and NURD-NC are the held-out set): calibration 0.412 (11 of "
        "11 methods); held-out 0.250 (2 of 2 methods)."
    ) in page
    assert findings.verify_findings(page, sources) == []


def test_findings_give_the_held_out_test_under_the_paper_protocol(tmp_path):
    paths = _tables(tmp_path)
    paper_run = pd.DataFrame(
        {
            "dataset": DATASET,
            "protocol": "paper",
            "set": ["calibration", "held-out", "held-out"],
            "method": ["GBTR", "NURD", "NURD-NC"],
            "TPR": [0.3, 0.6125, float("nan")],
            "FPR": [0.01, 0.0875, float("nan")],
            "F1": [0.4, 0.55, float("nan")],
            "paper_TPR": [0.46, 0.95, 0.96],
            "paper_FPR": [0.01, 0.11, 0.6],
            "paper_F1": [0.57, 0.81, 0.42],
            "TPR_lo": [0.2, 0.5, float("nan")],
            "TPR_hi": [0.4, 0.7, float("nan")],
            "FPR_lo": [0.0, 0.05, float("nan")],
            "FPR_hi": [0.02, 0.125, float("nan")],
            "F1_lo": [0.3, 0.45, float("nan")],
            "F1_hi": [0.5, 0.65, float("nan")],
        }
    )
    paper_run.to_csv(tmp_path / "paper.csv", index=False)
    distances = pd.DataFrame(
        {
            "dataset": DATASET,
            "protocol": "paper",
            "set": ["calibration", "validation", "held-out"],
            "distance": [0.17, float("nan"), 0.4125],
            "rows": [1, 0, 1],
            "of": [11, 10, 2],
        }
    )
    distances.to_csv(tmp_path / "paper_distances.csv", index=False)
    page, sources = _write(
        tmp_path,
        paths,
        fingerprint_paper=str(tmp_path / "paper.csv"),
        fingerprint_paper_distances=str(tmp_path / "paper_distances.csv"),
    )
    # NURD-NC has no score: left out; the validation set has no scored row: not quoted
    assert (
        "calibration): NURD TPR 0.613 [0.500, 0.700], FPR 0.087 [0.050, 0.125], "
        "F1 0.550 [0.450, 0.650] (paper: TPR 0.950, FPR 0.110, F1 0.810). Distance to the "
        "paper's Table 3 under that protocol: calibration 0.170; held-out 0.412."
    ) in page
    assert "NURD-NC" not in page.split("Held-out test")[1].split("):", 1)[1]
    assert findings.verify_findings(page, sources) == []


def test_a_real_dataset_leads_with_every_method_beside_the_paper_and_the_generated(tmp_path):
    paths = _tables(tmp_path)
    table3 = pd.read_csv(paths["table3"])
    real = table3.assign(
        dataset="real",
        F1=[0.6, 0.3, 0.5, 0.95],
        jobs_evaluated=4,
        paper_TPR=[0.95, 0.5, 0.46, float("nan")],
        paper_FPR=[0.11, 0.2, 0.01, float("nan")],
        paper_F1=[0.81, 0.4, 0.57, float("nan")],
    )
    nan = float("nan")
    failing = real.iloc[[0]].assign(
        method="AlwaysFails", F1=nan, paper_TPR=nan, paper_FPR=nan, paper_F1=nan
    )
    pd.concat([real, failing, table3], ignore_index=True).to_csv(paths["table3"], index=False)
    paper_run = pd.DataFrame(
        {
            "dataset": "real",
            "method": ["NURD", "GBTR"],
            "TPR": [0.671, 0.413],
            "FPR": [0.039, 0.0],
            "F1": [0.681, 0.518],
            "F1_lo": [0.34, 0.0],
            "F1_hi": [0.903, 0.903],
            "paper_TPR": [0.95, 0.46],
            "paper_FPR": [0.11, 0.01],
            "paper_F1": [0.81, 0.57],
        }
    )
    pd.DataFrame(
        {
            "dataset": DATASET,
            "reference": "real",
            "set": ["calibration", "held-out"],
            "distance": [0.123, float("nan")],
            "rows": [2, 0],
            "of": [2, 2],
            "loo_min": [0.1, float("nan")],
            "loo_max": [0.2, float("nan")],
        }
    ).to_csv(tmp_path / "real.csv", index=False)
    paper_path = str(tmp_path / "paper.csv")
    paper_run.to_csv(paper_path, index=False)
    out_md, out_sources = tmp_path / "findings.md", tmp_path / "findings.sources.csv"
    findings.write_findings(
        **paths,
        audit=None,
        datasets=[DATASET, "real"],
        real_datasets=["real"],
        protocol="causal",
        config_name="config/config.yaml",
        out_md=str(out_md),
        out_sources=str(out_sources),
        fingerprint_paper=paper_path,
        real_distances=str(tmp_path / "real.csv"),
    )
    page, sources = out_md.read_text(), pd.read_csv(out_sources, dtype=str)
    assert page.index("## real (real jobs)") < page.index(f"## {DATASET}")
    # by hand: NURD first by F1 (0.6), then GBTR, LOF; the Oracle last (privileged)
    assert "| NURD | 0.671 | 0.039 | 0.681 [0.340, 0.903] | 0.950 | 0.110 | 0.810 | 0.600" in page
    assert "| NURD | " in page and page.index("| GBTR | ") < page.index("| LOF | ")
    assert page.index("| LOF | ") < page.index("| Oracle (privileged) | ")
    assert "| AlwaysFails |  |  |  |  |  |  |  |  |" in page  # no number: empty, not n/a
    assert "| LOF |  |  |  | 0.500 | 0.200 | 0.400 | 0.300 [0.470, 0.580] | 0.520 |" in page
    assert "4 jobs evaluated" in page and "about the range of the per-job values" in page
    assert (
        "- Distance to the real jobs of `real` (the same fingerprint with their rows in place "
        "of the paper's, both under `protocol: paper`): calibration 0.123 (each real job left "
        "out: 0.100 to 0.200)."
    ) in page
    assert findings.verify_findings(page, sources) == []
