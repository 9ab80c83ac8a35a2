"""Result tables (CSV + self-explaining Markdown) and the figures of the paper's Figures 2-9:
`write_table` for any frame, `write_table3` for Table 3's layout (methods grouped by family,
one Markdown table per dataset, a long-format CSV beside the paper's published numbers), the
lead of flagged stragglers and the completion-time figures. Completion-time frames have one
row per (dataset, method, algorithm, machines, job_id, repeat) with the job's `reduction`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from stragglers.evaluate.metrics import normalise_method_name, sort_rows
from stragglers.io import pyplot, save_figure, write_csv_atomic, write_text_atomic

TABLE3_METRICS = ("TPR", "FPR", "FNR", "F1")
JOB_COUNTS = ("jobs_evaluated", "jobs_failed", "jobs_unscorable")
PAPER_TABLE3_COLUMNS = ["method", "dataset", "TPR", "FPR", "FNR", "F1", "source"]
SIMULATION_COLUMNS = ["dataset", "method", "algorithm", "machines", "job_id", "repeat", "reduction"]
ALGORITHMS = ("unlimited", "limited")
PRIVILEGED_MARK = "†"
TIE_MARK = "≈"  # statistically tied with the best (stragglers.evaluate.bootstrap)
MISSING = "–"


# ---------------------------------------------------------------------------------------
# Markdown tables


def _format_cell(value, digits: int) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        return f"{value:.{digits}f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(df: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub-flavoured Markdown table; floats rounded to `digits`, numbers right-aligned."""
    header = "| " + " | ".join(str(c).replace("|", "\\|") for c in df.columns) + " |"
    aligns = [
        "---:"
        if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
        else "---"
        for c in df.columns
    ]
    lines = [header, "| " + " | ".join(aligns) + " |"]
    for row in df.itertuples(index=False, name=None):
        lines.append("| " + " | ".join(_format_cell(v, digits) for v in row) + " |")
    return "\n".join(lines) + "\n"


def _write_markdown(display: pd.DataFrame, md_path, title: str, caption: str, digits: int) -> None:
    text = f"# {title}\n\n{caption.strip()}\n\n{markdown_table(display, digits)}"
    write_text_atomic(text, md_path)


def write_table(
    df: pd.DataFrame, csv_path, md_path, title: str, caption: str, digits: int = 3
) -> None:
    """Write `df` as CSV (full precision) and as Markdown with a title and a caption.

    The caption should say what a row is and what each column means, so the results
    directory explains itself. Numbers are rounded in the Markdown only.
    """
    if not caption or not caption.strip():
        raise ValueError(f"write_table({md_path}): a caption explaining the columns is required")
    write_csv_atomic(df, csv_path)
    _write_markdown(df, md_path, title, caption, digits)


# ---------------------------------------------------------------------------------------
# Table 3


def read_paper_table3(path) -> pd.DataFrame:
    """The paper's published Table 3 numbers (columns: PAPER_TABLE3_COLUMNS)."""
    table = pd.read_csv(path)
    missing = [c for c in PAPER_TABLE3_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: lacks columns {missing}; has {list(table.columns)}")
    keys = pd.DataFrame(
        {
            "m": table["method"].map(normalise_method_name),
            "d": table["dataset"].astype(str).str.lower(),
        }
    )
    duplicated = keys.duplicated(keep=False)
    if duplicated.any():
        rows = (table.index[duplicated] + 2).tolist()  # +2: header line and 1-based lines
        raise ValueError(f"{path}: duplicate (method, dataset) on lines {rows}")
    return table


TIMING_DISPLAY = (
    ("early_TPR", "early-TPR"),
    ("early_F1", "early-F1"),
    ("median_lead", "median lead"),
)


def table3_long(
    summary: pd.DataFrame,
    paper: pd.DataFrame | None = None,
    dataset_order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Table 3 in long form: one row per (dataset, method), ordered as in the paper.

    Keeps every column of `summary` (TPR, FPR, FNR, F1, job counts and, if present, the
    timing columns of `stragglers.evaluate.timing`). With `paper` (see `read_paper_table3`),
    adds "paper_<metric>" columns, matched on method and dataset names ignoring case and
    punctuation (NaN where the paper has no number).
    """
    required = ["dataset", "method", "family", "privileged", *JOB_COUNTS, *TABLE3_METRICS]
    missing = [c for c in required if c not in summary.columns]
    if missing:
        raise ValueError(f"summary table lacks columns {missing}")
    long = sort_rows(summary.copy(), dataset_order=dataset_order)
    if paper is not None:
        published = paper.assign(
            _m=paper["method"].map(normalise_method_name),
            _d=paper["dataset"].astype(str).str.lower(),
        ).set_index(["_d", "_m"])
        keys = pd.MultiIndex.from_arrays(
            [long["dataset"].astype(str).str.lower(), long["method"].map(normalise_method_name)]
        )
        for metric in TABLE3_METRICS:
            long[f"paper_{metric}"] = published[metric].reindex(keys).to_numpy(dtype=float)
    return long


def _bold_best(values: pd.Series, privileged: pd.Series, digits: int) -> list[str]:
    """Format `values`; the best non-privileged one (ties at the shown precision) in bold."""
    fair = values.where(~privileged.astype(bool))
    best = fair.max() if fair.notna().any() else np.nan
    cells = []
    for v, p in zip(values, privileged, strict=True):
        if pd.isna(v):
            cells.append(MISSING)
        elif not p and not pd.isna(best) and round(v, digits) == round(best, digits):
            cells.append(f"**{v:.{digits}f}**")
        else:
            cells.append(f"{v:.{digits}f}")
    return cells


def _with_interval(
    cells, part: pd.DataFrame, column: str, digits: int, ties: dict | None = None
) -> list:
    """`cells` (formatted values, or raw numbers) with their interval `v [lo, hi]` when the
    frame has `<column>_lo` / `_hi`, and the tie mark for the methods in `ties`."""
    values = part[column].reset_index(drop=True)
    cells = [
        c if isinstance(c, str) else (MISSING if pd.isna(c) else f"{c:.{digits}f}") for c in cells
    ]
    if f"{column}_lo" in part:
        low = part[f"{column}_lo"].to_numpy(float)
        high = part[f"{column}_hi"].to_numpy(float)
        cells = [
            c
            if pd.isna(v) or np.isnan(lo) or np.isnan(hi)
            else f"{c} [{lo:.{digits}f}, {hi:.{digits}f}]"
            for c, v, lo, hi in zip(cells, values, low, high, strict=True)
        ]
    if ties:
        dataset = part["dataset"].to_numpy()
        cells = [
            f"{c} {TIE_MARK}" if ties.get((d, column, m)) else c
            for c, d, m in zip(cells, dataset, part["method"], strict=True)
        ]
    return cells


def _table3_display(
    part: pd.DataFrame, with_paper: bool, digits: int, ties: dict | None = None
) -> pd.DataFrame:
    """One dataset's Markdown view: family shown once per group, privileged marker, bold best
    F1 and early-F1, ours beside the paper's numbers, then the timing columns and job counts.
    Intervals (`<metric>_lo` / `_hi` columns) are shown as `v [lo, hi]`; `ties` (keys
    (dataset, metric, method)) marks methods tied with the best."""
    display = pd.DataFrame()
    family = part["family"].astype(str).reset_index(drop=True)
    display["family"] = family.where(family != family.shift(), "")
    display["method"] = [
        f"{m} {PRIVILEGED_MARK}" if p else str(m)
        for m, p in zip(part["method"], part["privileged"], strict=True)
    ]
    privileged = part["privileged"].reset_index(drop=True)
    for metric in TABLE3_METRICS:
        values = part[metric].reset_index(drop=True)
        display[metric] = _bold_best(values, privileged, digits) if metric == "F1" else values
        if f"{metric}_lo" in part or (metric == "F1" and ties):
            display[metric] = _with_interval(display[metric], part, metric, digits, ties)
    if with_paper:
        for metric in TABLE3_METRICS:
            display[f"paper {metric}"] = part[f"paper_{metric}"].to_numpy()
    for column, label in TIMING_DISPLAY:
        if column in part:
            values = part[column].reset_index(drop=True)
            display[label] = (
                _bold_best(values, privileged, digits) if column == "early_F1" else values
            )
            if f"{column}_lo" in part or (column == "early_F1" and ties):
                display[label] = _with_interval(display[label], part, column, digits, ties)
    counts = zip(*(part[c] for c in JOB_COUNTS), strict=True)
    display["jobs ok/failed/unscorable"] = [
        MISSING if pd.isna(ok) else "/".join(str(int(n)) for n in (ok, *rest))
        for ok, *rest in counts
    ]
    return display


def write_table3(
    summary: pd.DataFrame,
    csv_path,
    md_path,
    paper_table3_path=None,
    dataset_order: Sequence[str] | None = None,
    title: str = "Table 3: straggler prediction accuracy, averaged over jobs",
    digits: int = 2,
    intervals: pd.DataFrame | None = None,
    ties: dict | None = None,
    confidence_level: float = 0.95,
) -> pd.DataFrame:
    """Write Table 3: long CSV (one row per dataset and method) and Markdown with one table
    per dataset; returns the long frame.

    `paper_table3_path` None skips the join with the paper's published numbers.
    `intervals` (stragglers.evaluate.bootstrap.table3_intervals) adds its `<metric>_lo` /
    `<metric>_hi` columns and `interval_note` after every other column; `ties`
    ({(dataset, metric, method): True}, bootstrap.tie_marks) marks the methods statistically
    tied with the best F1 / early-F1 in the Markdown.
    """
    paper = read_paper_table3(paper_table3_path) if paper_table3_path is not None else None
    datasets = (
        list(dataset_order)
        if dataset_order is not None
        else list(dict.fromkeys(summary["dataset"]))
    )
    long = table3_long(summary, paper, datasets)
    if intervals is not None:
        # appended: the columns before keep their values and their positions
        added = [c for c in intervals.columns if c not in ("dataset", "method")]
        long = long.merge(
            intervals[["dataset", "method", *added]],
            on=["dataset", "method"],
            how="left",
            validate="one_to_one",
        )
    write_csv_atomic(long, csv_path)

    caption = (
        "One table per dataset; one row per method, grouped by family as in the paper's "
        "Table 3: TPR (true positive rate, higher is better), FPR (false positive rate, lower "
        "is better), FNR (false negative rate = 1 - TPR, lower is better) and F1 (higher is "
        "better), each computed per job over the tasks it scores and then averaged over jobs. "
        "A task counts as predicted straggler if the method flagged it at any checkpoint. "
        "'jobs ok/failed/unscorable': jobs averaged / jobs on which the method failed "
        "(counted, never averaged) / jobs with no scored straggler, where TPR and F1 are "
        "undefined (counted, not averaged). "
        f"{PRIVILEGED_MARK} marks privileged methods that see true latency labels (the "
        "Oracle, and Wrangler's labelled training split, whose tasks are not scored); they "
        "are not comparable with the online methods. The best F1 of the non-privileged "
        "methods in each dataset is in bold."
    )
    if any(column in long for column, _ in TIMING_DISPLAY):
        caption += (
            " How early (stragglers/evaluate/timing.py): a flag is early when raised while "
            "the task's elapsed time is below the straggler threshold tau, i.e. before the "
            "clock alone gives the label away; early-TPR and early-F1 count only early flags "
            "as predicted positives (a late flag on a straggler is a miss; the best "
            "non-privileged early-F1 is in bold); median lead is the median, over all "
            "flagged true stragglers, of (task end - flag time) / (task end - task start), "
            "the share of the task's life still ahead when it was flagged."
        )
    if intervals is not None:
        caption += (
            f" In brackets: the {100 * confidence_level:g} % bootstrap interval over jobs "
            "(jobs resampled with replacement, seeded; docs/statistics.md), in the CSV as "
            "<metric>_lo / <metric>_hi; none where it cannot be computed (one scored job, or a "
            "median lead undefined in some resamples: see interval_note in the CSV)."
        )
    if ties is not None:
        caption += (
            f" {TIE_MARK} marks a method statistically tied with the best (bold) F1 or "
            "early-F1: its paired bootstrap difference from the best, over the jobs both "
            "scored, is not significant after Holm's correction over the dataset's methods "
            "(results/tables/paired_comparisons.csv, docs/statistics.md)."
        )
    if paper is not None:
        caption += (
            " 'paper' columns are the numbers published in the paper (sources: "
            + "; ".join(sorted(set(paper["source"].astype(str))))
            + "); the paper's FNR is not always 1 - TPR."
        )
        ours = set(long["method"].map(normalise_method_name))
        paper_only = sorted({m for m in paper["method"] if normalise_method_name(m) not in ours})
        if paper_only:
            caption += f" Methods in the paper not run here: {', '.join(paper_only)}."
    sections = []
    for dataset in datasets:
        part = long[long["dataset"] == dataset]
        if part.empty:
            continue
        display = _table3_display(part, paper is not None, digits, ties)
        sections.append(f"## {dataset}\n\n{markdown_table(display, digits)}")
    md_path = Path(md_path)
    md_path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(f"# {title}\n\n{caption.strip()}\n\n" + "\n".join(sections), md_path)
    return long


# ---------------------------------------------------------------------------------------
# figures


def _save(fig, path, extra_formats: Sequence[str]) -> None:
    plt = pyplot()
    path = Path(path)
    save_figure(fig, path, dpi=150, bbox_inches="tight")
    for extension in extra_formats:
        save_figure(fig, path.with_suffix("." + extension.lstrip(".")), bbox_inches="tight")
    plt.close(fig)


def _line_styles(n: int) -> list[tuple]:
    """Distinguishable (colour, marker) pairs for up to ~40 lines."""
    plt = pyplot()
    tab20 = plt.get_cmap("tab20").colors
    colours = tab20[0::2] + tab20[1::2]  # the 10 dark shades first, then their light pairs
    markers = ["o", "s", "^", "D", "v", "P", "X", "*"]
    return [(colours[i % len(colours)], markers[i % len(markers)]) for i in range(n)]


def _horizontal_box() -> dict:
    """boxplot's `vert` is deprecated from Matplotlib 3.10, where `orientation` replaces it."""
    import matplotlib

    if tuple(int(x) for x in matplotlib.__version__.split(".")[:2]) >= (3, 10):
        return {"orientation": "horizontal"}
    return {"vert": False}


def plot_lead_distribution(
    leads: pd.DataFrame,
    job_metrics: pd.DataFrame,
    path,
    dataset: str,
    extra_formats: Sequence[str] = (),
) -> None:
    """How early each method flags: the distribution of the lead of its flagged true
    stragglers (one box per method, Table 3's order), early flags and late flags apart.

    Input: `stragglers.evaluate.timing.flag_leads` rows and the job metrics (for the list of
    methods, so a method that found no straggler still gets a labelled, empty row).
    """
    plt = pyplot()
    required = ["dataset", "method", "lead", "early"]
    missing = [c for c in required if c not in leads.columns]
    if missing:
        raise ValueError(f"lead frame lacks columns {missing}")
    methods = sort_rows(
        job_metrics.loc[job_metrics["dataset"] == dataset, ["method", "family", "privileged"]]
        .drop_duplicates("method")
        .reset_index(drop=True)  # sort_rows needs unique labels
    )
    if methods.empty:
        raise ValueError(f"no job metrics for dataset {dataset!r}")
    frame = leads[leads["dataset"] == dataset]
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(methods) + 1.2))
    labels = []
    for position, (_, row) in enumerate(methods.iterrows()):
        mine = frame[frame["method"] == row["method"]]
        values = mine["lead"].to_numpy(float)
        early = mine["early"].to_numpy(bool)
        name = f"{row['method']} {PRIVILEGED_MARK}" if row["privileged"] else str(row["method"])
        labels.append(
            f"{name}  (n={len(values)}, early {early.mean():.0%})"
            if len(values)
            else f"{name}  (none found)"
        )
        if len(values):
            ax.boxplot(
                values,
                positions=[position],
                widths=0.6,
                **_horizontal_box(),
                showfliers=False,
                medianprops={"color": "black"},
            )
            jitter = np.random.default_rng(position).uniform(-0.2, 0.2, len(values))
            ax.scatter(
                values[early],
                position + jitter[early],
                s=4,
                alpha=0.4,
                color="tab:blue",
                label="early flag" if position == 0 else None,
            )
            ax.scatter(
                values[~early],
                position + jitter[~early],
                s=4,
                alpha=0.4,
                color="tab:red",
                label="late flag" if position == 0 else None,
            )
    ax.set_yticks(range(len(methods)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel(
        "lead = (task end - flag time) / (task end - task start), fraction of the task's life"
    )
    ax.grid(alpha=0.3, axis="x")
    ax.set_title(f"Lead of flagged stragglers, {dataset} (blue: early, red: late flags)")
    _save(fig, path, extra_formats)


def _check_simulation_frame(df: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in SIMULATION_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"completion-time frame lacks columns {missing}; has {list(df.columns)}")
    bad = ~df["algorithm"].isin(ALGORITHMS)
    if bad.any():
        raise ValueError(
            f"completion-time frame: algorithm must be one of {ALGORITHMS}, "
            f"got {sorted(set(df.loc[bad, 'algorithm'].astype(str)))}"
        )
    frame = df.copy()
    unlimited = frame["algorithm"] == "unlimited"
    # unlimited rows may carry -1 or NaN; one value keeps them in one group
    frame["machines"] = frame["machines"].astype(float).where(~unlimited, -1.0)
    limited_machines = frame.loc[~unlimited, "machines"]
    bad = ~(limited_machines >= 1) | (limited_machines != np.round(limited_machines))
    if bad.any():
        raise ValueError(
            "completion-time frame: 'limited' rows need a positive integer "
            f"machines, got {sorted(set(limited_machines[bad]))[:5]}"
        )
    return frame


def _per_job(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Mean reduction over repeats (and whatever else is not in `keys`) per job."""
    return (
        frame.dropna(subset=["reduction"])
        .groupby(keys + ["job_id"], sort=False, observed=True)["reduction"]
        .mean()
        .reset_index()
    )


def _over_jobs(per_job: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    out = (
        per_job.groupby(keys, sort=False, observed=True)["reduction"]
        .agg(reduction_mean="mean", reduction_std="std", n_jobs="size")
        .reset_index()
    )
    return out


def simulation_tables(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean reduction in completion time over repeats, then over jobs (std and count over jobs).

    Returns (per_method_unlimited, per_method_by_machines): the first has one row per
    (dataset, method) for the "unlimited" algorithm, the second one row per
    (dataset, method, machines) for "limited". Rows with NaN reduction are skipped, so
    n_jobs counts the jobs that have a value.
    """
    frame = _check_simulation_frame(df)
    unlimited = frame[frame["algorithm"] == "unlimited"]
    limited = frame[frame["algorithm"] == "limited"]
    per_method_unlimited = _over_jobs(
        _per_job(unlimited, ["dataset", "method"]), ["dataset", "method"]
    )
    by_machine_keys = ["dataset", "method", "machines"]
    per_method_by_machines = _over_jobs(_per_job(limited, by_machine_keys), by_machine_keys)
    per_method_by_machines["machines"] = per_method_by_machines["machines"].astype(np.int64)
    return (sort_rows(per_method_unlimited), sort_rows(per_method_by_machines, extra=["machines"]))


def reduction_by_method(df: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, method): mean reduction over jobs, where a job's value is its mean over
    repeats and machine counts (Figures 4-5 with "unlimited" rows, 8-9 with "limited" rows).

    The frame must hold one algorithm only, so unlimited and limited runs are never mixed.
    """
    frame = _check_simulation_frame(df)
    algorithms = sorted(set(frame["algorithm"]))
    if len(algorithms) != 1:
        raise ValueError(
            f"reduction_by_method needs rows of exactly one algorithm, got "
            f"{algorithms}; filter on the 'algorithm' column first"
        )
    per_job = _per_job(frame, ["dataset", "method"])
    return sort_rows(_over_jobs(per_job, ["dataset", "method"]))


def _one_dataset(frame: pd.DataFrame, what: str) -> str:
    datasets = sorted(set(frame["dataset"]))
    if len(datasets) != 1:
        raise ValueError(f"{what} draws one dataset, got {datasets}; filter on 'dataset'")
    return datasets[0]


def plot_reduction_bars(
    df: pd.DataFrame, path, title: str, extra_formats: Sequence[str] = ()
) -> None:
    """Figures 4, 5, 8, 9: one bar per method, mean reduction over jobs, error bar = std.

    `df` is the completion-time frame of one dataset and one algorithm.
    """
    plt = pyplot()
    table = reduction_by_method(df)
    _one_dataset(table, "plot_reduction_bars")
    fig, ax = plt.subplots(figsize=(max(5.0, 0.45 * len(table) + 2), 4))
    positions = np.arange(len(table))
    ax.bar(
        positions,
        table["reduction_mean"],
        yerr=table["reduction_std"].fillna(0.0),
        capsize=3,
        color="tab:blue",
        edgecolor="black",
        linewidth=0.5,
    )
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xticks(positions)
    ax.set_xticklabels(table["method"], rotation=60, ha="right")
    ax.set_ylabel("reduction in job completion time (fraction)")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    _save(fig, path, extra_formats)


def plot_reduction_by_machines(
    df: pd.DataFrame, path, title: str | None = None, extra_formats: Sequence[str] = ()
) -> None:
    """Figures 6-7: x = number of machines, y = mean reduction over jobs, one line per method.

    Uses the "limited" rows of one dataset's completion-time frame.
    """
    plt = pyplot()
    _, by_machines = simulation_tables(df)
    if by_machines.empty:
        raise ValueError("plot_reduction_by_machines: no 'limited' rows with a reduction")
    dataset = _one_dataset(by_machines, "plot_reduction_by_machines")
    methods = list(dict.fromkeys(by_machines["method"]))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for method, (colour, marker) in zip(methods, _line_styles(len(methods)), strict=True):
        line = by_machines[by_machines["method"] == method].sort_values("machines")
        ax.plot(
            line["machines"],
            line["reduction_mean"],
            color=colour,
            marker=marker,
            markersize=4,
            label=str(method),
        )
    ax.set_xticks(np.sort(by_machines["machines"].unique()))
    ax.set_xlabel("machines (count)")
    ax.set_ylabel("reduction in job completion time (fraction)")
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.grid(alpha=0.3)
    ax.set_title(title or f"Reduction in job completion time by machines, {dataset}")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    _save(fig, path, extra_formats)
