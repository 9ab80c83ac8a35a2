"""Tests of stragglers.report: tables (CSV + Markdown), Table 3 layout, figures, simulation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stragglers.report import tables as rp

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def summary_frame() -> pd.DataFrame:
    """A small long-form Table 3 as stragglers.evaluate.metrics.summary_table returns it."""
    rows = []
    for dataset, shift in (("google", 0.0), ("alibaba", -0.1)):
        for method, family, privileged, f1 in (
            ("GBTR", "Supervised", False, 0.57),
            ("KNN", "Outlier detection", False, 0.32),
            ("NURD", "Ours", False, 0.81),
            ("Oracle", "Reference", True, 1.0),
        ):
            rows.append(
                {
                    "dataset": dataset,
                    "method": method,
                    "family": family,
                    "privileged": privileged,
                    "jobs_evaluated": 10,
                    "jobs_failed": 2 if method == "KNN" else 0,
                    "jobs_unscorable": 1,
                    "jobs_fpr_undefined": 0,
                    "TPR": 0.9 + shift / 2,
                    "FPR": 0.1,
                    "FNR": 0.1 - shift / 2,
                    "precision": 0.7,
                    "F1": f1 + shift,
                    "F1_std": 0.05,
                }
            )
    return pd.DataFrame(rows)


def test_markdown_table_rounds_and_aligns():
    frame = pd.DataFrame({"method": ["a|b", "c"], "F1": [0.123456, np.nan], "jobs": [3, 4]})
    text = rp.markdown_table(frame, digits=2)
    lines = text.strip().splitlines()
    assert lines[0] == "| method | F1 | jobs |"
    assert lines[1] == "| --- | ---: | ---: |"
    assert lines[2] == "| a\\|b | 0.12 | 3 |"
    assert lines[3] == f"| c | {rp.MISSING} | 4 |"


def test_write_table_csv_full_precision_markdown_rounded(tmp_path):
    frame = pd.DataFrame({"method": ["NURD"], "F1": [0.8123456]})
    rp.write_table(
        frame,
        tmp_path / "t.csv",
        tmp_path / "sub" / "t.md",
        "Title",
        "One row per method; F1 is the mean over jobs.",
    )
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "t.csv"), frame)
    text = (tmp_path / "sub" / "t.md").read_text()
    assert text.startswith("# Title\n\nOne row per method")
    assert "| NURD | 0.812 |" in text
    with pytest.raises(ValueError, match="caption"):
        rp.write_table(frame, tmp_path / "u.csv", tmp_path / "u.md", "Title", " ")


def test_table3_layout_and_markdown(tmp_path):
    long = rp.write_table3(
        summary_frame(),
        tmp_path / "t3.csv",
        tmp_path / "t3.md",
        dataset_order=["google", "alibaba"],
    )
    # long format: one row per (dataset, method), datasets in the given order
    assert set(zip(long["dataset"], long["method"])) == {
        (d, m) for d in ("google", "alibaba") for m in ("GBTR", "KNN", "NURD", "Oracle")
    }
    nurd = long[(long["method"] == "NURD") & (long["dataset"] == "alibaba")]
    assert nurd["F1"].item() == pytest.approx(0.71)
    assert pd.read_csv(tmp_path / "t3.csv").shape == long.shape

    text = (tmp_path / "t3.md").read_text()
    # one table per dataset, in the given order
    assert text.index("## google") < text.index("## alibaba")
    headers = [line for line in text.splitlines() if line.startswith("| family")]
    assert len(headers) == 2
    assert headers[0] == ("| family | method | TPR | FPR | FNR | F1 | jobs ok/failed/unscorable |")
    assert f"| Reference | Oracle {rp.PRIVILEGED_MARK} |" in text
    # the best non-privileged F1 is bold; the Oracle's higher F1 is not
    assert "| **0.81** |" in text and "**1.00**" not in text
    assert "| 10/2/1 |" in text  # KNN's job counts
    assert "privileged" in text.split("|")[0]  # the caption explains the marker
    assert "paper" not in headers[0]


def test_table3_shows_timing_columns_when_present(tmp_path):
    summary = summary_frame().assign(early_TPR=0.2, early_F1=0.3, median_lead=0.4)
    summary.loc[summary["method"] == "KNN", "early_F1"] = 0.35
    rp.write_table3(summary, tmp_path / "t3.csv", tmp_path / "t3.md")
    text = (tmp_path / "t3.md").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| family"))
    assert header.endswith("| early-TPR | early-F1 | median lead | jobs ok/failed/unscorable |")
    assert "| **0.35** |" in text and "early" in text.split("|")[0]


def test_table3_joins_paper_numbers(tmp_path):
    paper = pd.DataFrame(
        {
            "method": ["nurd", "GBTR", "SOS"],
            "dataset": ["Google", "google", "google"],
            "TPR": [0.95, 0.46, 0.22],
            "FPR": [0.11, 0.01, 0.24],
            "FNR": [0.09, 0.54, 0.78],
            "F1": [0.81, 0.57, 0.12],
            "source": ["Table 3"] * 3,
        }
    )
    paper.to_csv(tmp_path / "paper_table3.csv", index=False)
    long = rp.write_table3(
        summary_frame(),
        tmp_path / "t3.csv",
        tmp_path / "t3.md",
        paper_table3_path=tmp_path / "paper_table3.csv",
    )
    rows = long.set_index(["dataset", "method"])
    assert rows.loc[("google", "NURD"), "paper_F1"] == pytest.approx(0.81)
    assert np.isnan(rows.loc[("alibaba", "NURD"), "paper_F1"])
    assert np.isnan(rows.loc[("google", "KNN"), "paper_TPR"])
    text = (tmp_path / "t3.md").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| family"))
    assert "| F1 | paper TPR | paper FPR | paper FNR | paper F1 |" in header
    assert "not run here: SOS" in text and "Table 3" in text


def test_paper_table3_validation(tmp_path):
    path = tmp_path / "paper.csv"
    pd.DataFrame({"method": ["NURD"], "dataset": ["google"], "F1": [0.8]}).to_csv(path)
    with pytest.raises(ValueError, match="lacks columns"):
        rp.read_paper_table3(path)
    pd.DataFrame(
        {
            c: ["NURD", "NURD"]
            if c == "method"
            else ["google", "google"]
            if c == "dataset"
            else [0.5, 0.5]
            for c in rp.PAPER_TABLE3_COLUMNS
        }
    ).to_csv(path, index=False)
    with pytest.raises(ValueError, match="duplicate"):
        rp.read_paper_table3(path)


def test_f1_over_time_panels_by_family(tmp_path):
    """Small multiples: one panel per family, a family of 9 split 5 + 4 (at most 8 lines with
    NURD and the Oracle), the references in no family panel of their own."""
    from stragglers.report import figures

    times = np.arange(1, 11) / 10
    methods = [
        ("NURD", "Ours", False),
        ("Oracle", "Reference", True),
        ("GBTR", "Supervised", False),
    ]
    methods += [(f"OD{i}", "Outlier detection", False) for i in range(9)]
    mean = pd.concat(
        [
            pd.DataFrame(
                {
                    "dataset": "google",
                    "method": m,
                    "family": f,
                    "privileged": p,
                    "k": np.arange(1, 11),
                    "normalised_time": times,
                    "F1": times * 0.5,
                }
            )
            for m, f, p in methods
        ]
    )
    panels = figures.family_panels(mean.drop_duplicates("method"))
    assert panels == [
        ("Supervised", ["GBTR"]),
        ("Outlier detection (1/2)", [f"OD{i}" for i in range(5)]),
        ("Outlier detection (2/2)", [f"OD{i}" for i in range(5, 9)]),
    ]
    assert all(len(names) + 2 <= figures.MAX_LINES_PER_PANEL for _, names in panels)
    path = tmp_path / "figs" / "f1.png"
    figures.plot_f1_over_time_panels(mean, path, "google", "causal")
    assert path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 1000
    with pytest.raises(ValueError, match="no F1-over-time rows"):
        figures.plot_f1_over_time_panels(mean, tmp_path / "x.png", "alibaba", "causal")
    # a run of the references alone (a config with only NURD) still gets one panel
    only_nurd = mean[mean["method"] == "NURD"]
    assert figures.family_panels(only_nurd.drop_duplicates("method")) == [("NURD", [])]
    figures.plot_f1_over_time_panels(only_nurd, tmp_path / "nurd.png", "google", "causal")
    assert (tmp_path / "nurd.png").read_bytes()[:8] == PNG_MAGIC


def simulation_frame() -> pd.DataFrame:
    """Reductions: value = method base + 0.01 * job + 0.001 * repeat (+ 0.1 per 10 machines)."""
    rows = []
    base = {"NURD": 0.3, "GBTR": 0.1}
    for method, b in base.items():
        for job in range(3):
            for repeat in range(2):
                rows.append(
                    {
                        "dataset": "google",
                        "method": method,
                        "algorithm": "unlimited",
                        "machines": -1,
                        "job_id": f"j{job}",
                        "repeat": repeat,
                        "reduction": b + 0.01 * job + 0.001 * repeat,
                    }
                )
                for machines in (10, 20):
                    rows.append(
                        {
                            "dataset": "google",
                            "method": method,
                            "algorithm": "limited",
                            "machines": machines,
                            "job_id": f"j{job}",
                            "repeat": repeat,
                            "reduction": b + 0.01 * machines + 0.01 * job,
                        }
                    )
    return pd.DataFrame(rows)


def test_simulation_tables_means_over_repeats_then_jobs():
    unlimited, by_machines = rp.simulation_tables(simulation_frame())
    assert unlimited["method"].tolist() == ["GBTR", "NURD"]  # paper order
    nurd = unlimited.set_index("method").loc["NURD"]
    # per job: 0.3 + 0.01 j + 0.0005 -> mean over j = 0..2: 0.3105; std over jobs: 0.01
    assert nurd["reduction_mean"] == pytest.approx(0.3105)
    assert nurd["reduction_std"] == pytest.approx(0.01)
    assert nurd["n_jobs"] == 3
    row = by_machines[(by_machines["method"] == "NURD") & (by_machines["machines"] == 20)]
    assert row["reduction_mean"].item() == pytest.approx(0.3 + 0.2 + 0.01)
    assert by_machines["machines"].tolist() == [10, 20, 10, 20]


def test_reduction_by_method_averages_machines_and_rejects_mixed_algorithms():
    frame = simulation_frame()
    limited = rp.reduction_by_method(frame[frame["algorithm"] == "limited"])
    nurd = limited.set_index("method").loc["NURD"]
    assert nurd["reduction_mean"] == pytest.approx(0.3 + 0.15 + 0.01)
    with pytest.raises(ValueError, match="exactly one algorithm"):
        rp.reduction_by_method(frame)
    with pytest.raises(ValueError, match="algorithm must be one of"):
        rp.simulation_tables(frame.assign(algorithm="fast"))
    bad = frame.copy()
    bad.loc[bad["algorithm"] == "limited", "machines"] = 0
    with pytest.raises(ValueError, match="positive integer"):
        rp.simulation_tables(bad)


def test_reduction_figures_are_written(tmp_path):
    frame = simulation_frame()
    bars = tmp_path / "bars.png"
    rp.plot_reduction_bars(frame[frame["algorithm"] == "unlimited"], bars, "Unlimited, google")
    assert bars.read_bytes()[:8] == PNG_MAGIC and bars.stat().st_size > 1000
    lines = tmp_path / "machines.png"
    rp.plot_reduction_by_machines(frame, lines)
    assert lines.read_bytes()[:8] == PNG_MAGIC and lines.stat().st_size > 1000
    two_datasets = pd.concat([frame, frame.assign(dataset="alibaba")])
    with pytest.raises(ValueError, match="one dataset"):
        rp.plot_reduction_by_machines(two_datasets, tmp_path / "x.png")


def _policies_rows():
    """Unlimited-machine rows: PoCD at D = 1.0 identical for everyone (0.02 apart at most),
    PoCD at D = 1.25 spread from 0.5 to 0.9."""
    rows = []
    for i, method in enumerate(["Hadoop-NS", "NURD", "Oracle", "LOF"]):
        for policy in ["none"] if method == "Hadoop-NS" else ["relaunch", "copy"]:
            rows.append(
                {
                    "dataset": "google",
                    "method": method,
                    "policy": policy,
                    "machines": "unlimited",
                    "reduction": 0.1 * i,
                    "reduction_lo": 0.1 * i - 0.05,
                    "reduction_hi": 0.1 * i + 0.05,
                    "machine_time_rel": 1 + 0.1 * i,
                    "pocd_1": 0.01 + 0.001 * i,
                    "pocd_1.25": 0.5 + 0.1 * i,
                }
            )
    return pd.DataFrame(rows)


def test_pocd_figure_leaves_out_a_flat_deadline(tmp_path, monkeypatch):
    from stragglers.io import pyplot
    from stragglers.report import figures

    panels = []
    original = pyplot().subplots

    def recording_subplots(*args, **kwargs):
        fig, axes = original(*args, **kwargs)
        panels.append(axes)
        return fig, axes

    monkeypatch.setattr(pyplot(), "subplots", recording_subplots)
    path = tmp_path / "pocd.png"
    figures.plot_pocd_vs_machine_time(_policies_rows(), path, "google", "causal", [1.0, 1.25])
    assert path.read_bytes()[:8] == PNG_MAGIC
    (axes,) = panels
    assert axes.shape == (1, 1)  # D = 1.0 varies by 0.003: left out
    assert "D = 1.25" in axes[0][0].get_title()
    low, high = axes[0][0].get_ylim()
    assert 0.4 < low < 0.5 and 0.8 < high <= 1.0  # its own scale, not 0-1


def test_overview_sets_privileged_apart(tmp_path, monkeypatch):
    from stragglers.report import figures

    table3 = pd.DataFrame(
        {
            "dataset": "google",
            "method": ["NURD", "LOF", "Oracle"],
            "privileged": [False, False, True],
            "F1": [0.3, 0.5, 0.9],
            "F1_lo": [0.2, 0.4, 0.85],
            "F1_hi": [0.4, 0.6, 0.95],
            "early_F1": [0.2, 0.1, 0.8],
        }
    )
    labels = []
    original = figures._scores_panel

    def recording(ax, *args):
        original(ax, *args)
        labels.append([t.get_text() for t in ax.get_yticklabels()])

    monkeypatch.setattr(figures, "_scores_panel", recording)
    path = tmp_path / "overview.png"
    figures.plot_overview(table3, _policies_rows(), path, ["google"], "causal")
    assert path.read_bytes()[:8] == PNG_MAGIC
    # bottom to top: online methods by F1, then the privileged ones above the gap
    assert labels == [["NURD", "LOF", "Oracle (privileged)"]]
