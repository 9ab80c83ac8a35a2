"""Figures a reader opens first: F1 over time as small multiples by method family, PoCD
against machine time per deadline, and the run's overview (results/figures/overview.png).

Every figure names its dataset and the replay protocol in its title and has units on its
axes; the captions are in workflow/report/.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from stragglers.evaluate.metrics import sort_rows
from stragglers.io import pyplot, save_figure

REFERENCE_METHODS = ("NURD", "Oracle")  # drawn in every panel, for comparison
MAX_LINES_PER_PANEL = 8
REFERENCE_STYLE = {
    "NURD": {"color": "black", "linestyle": "-", "linewidth": 2.2},
    "Oracle": {"color": "0.45", "linestyle": "--", "linewidth": 1.8},
}
POLICY_MARKERS = {"none": "*", "relaunch": "o", "copy": "s", "resume": "^"}
# PoCD values in a panel spanning less than this show nothing a reader can see
MIN_VISIBLE_SPREAD = 0.02


def family_panels(
    methods: pd.DataFrame, max_lines: int = MAX_LINES_PER_PANEL
) -> list[tuple[str, list[str]]]:
    """(panel title, methods) per panel: one family per panel in Table 3's order, a family
    with more methods than fit beside the references split into parts (1/2, 2/2, ...)."""
    room = max_lines - len(REFERENCE_METHODS)
    others = methods[~methods["method"].isin(REFERENCE_METHODS)]
    panels = []
    for family, rows in others.groupby("family", sort=False, dropna=False):
        names = list(rows["method"])
        family = "Other" if pd.isna(family) else str(family)
        parts = math.ceil(len(names) / room)
        size = math.ceil(len(names) / parts)  # even parts: 11 methods -> 6 + 5, not 6 + 5 + 0
        for part in range(parts):
            title = family if parts == 1 else f"{family} ({part + 1}/{parts})"
            panels.append((title, names[part * size : (part + 1) * size]))
    if not panels:  # only the references were run: one panel with just them
        panels.append(
            (" and ".join(m for m in REFERENCE_METHODS if m in set(methods["method"])), [])
        )
    return panels


def plot_f1_over_time_panels(
    mean_f1_over_time: pd.DataFrame, path, dataset: str, protocol: str
) -> None:
    """Figures 2-3 as small multiples: one panel per method family (at most
    MAX_LINES_PER_PANEL lines), NURD and the Oracle in every panel."""
    plt = pyplot()
    frame = mean_f1_over_time[mean_f1_over_time["dataset"] == dataset]
    if frame.empty:
        raise ValueError(f"no F1-over-time rows for dataset {dataset!r}")
    methods = sort_rows(frame.drop_duplicates("method"))
    panels = family_panels(methods)
    columns = min(3, max(1, len(panels)))
    rows = math.ceil(len(panels) / columns)
    fig, axes = plt.subplots(
        rows, columns, figsize=(4.6 * columns, 3.3 * rows), sharex=True, sharey=True, squeeze=False
    )
    ticks = np.round(np.sort(frame["normalised_time"].unique()), 2)
    for ax, (title, names) in zip(axes.flat, panels, strict=False):
        colours = plt.get_cmap("tab10").colors
        for i, method in enumerate(names):
            line = frame[frame["method"] == method].sort_values("normalised_time")
            ax.plot(
                line["normalised_time"],
                line["F1"],
                color=colours[i % len(colours)],
                marker="o",
                markersize=3,
                label=method,
            )
        for method in REFERENCE_METHODS:
            line = frame[frame["method"] == method].sort_values("normalised_time")
            if len(line):
                ax.plot(
                    line["normalised_time"], line["F1"], label=method, **REFERENCE_STYLE[method]
                )
        ax.set_title(title, fontsize=10)
        ax.set_ylim(0, 1)
        ax.set_xlim(0, 1.02)
        ax.set_xticks(ticks[1::2] if len(ticks) > 6 else ticks)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", frameon=False, ncol=2)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("time / job span (fraction)")
        ax.tick_params(labelbottom=True)
    for ax in axes[:, 0]:
        ax.set_ylabel("F1 (mean over jobs)")
    fig.suptitle(
        f"F1 over each job's span, {dataset}, protocol {protocol} "
        "(NURD black, Oracle grey dashed in every panel)",
        fontsize=11,
    )
    fig.tight_layout()
    save_figure(fig, path, dpi=130)
    plt.close(fig)


def plot_pocd_vs_machine_time(
    table: pd.DataFrame,
    path,
    dataset: str,
    protocol: str,
    deadline_factors: Sequence[float],
    named: Sequence[str] = ("Hadoop-NS", "Oracle", "NURD", "SRQuant", "LATE"),
) -> None:
    """PoCD against machine time (unlimited machines), one panel per deadline factor whose
    PoCD values differ visibly (a panel where every point is within MIN_VISIBLE_SPREAD is
    left out and named in the title). All methods as small grey points, the `named` methods
    in colour with a legend entry (method, policy by marker) instead of labels on the points."""
    plt = pyplot()
    unlimited = table[table["machines"].astype(str) == "unlimited"]
    shown, dropped = [], []
    for d in deadline_factors:
        values = unlimited[f"pocd_{d:g}"].dropna()
        spread = values.max() - values.min() if len(values) else 0.0
        (shown if spread >= MIN_VISIBLE_SPREAD else dropped).append(d)
    if not shown:  # nothing varies: keep the first panel so the figure still says so
        shown, dropped = [deadline_factors[0]], list(deadline_factors[1:])
    fig, axes = plt.subplots(1, len(shown), figsize=(5.2 * len(shown), 4.4), squeeze=False)
    colours = dict(zip(named, plt.get_cmap("tab10").colors, strict=False))
    for ax, d in zip(axes[0], shown, strict=True):
        column = f"pocd_{d:g}"
        for policy, rows in unlimited.groupby("policy", sort=False):
            ax.scatter(
                rows["machine_time_rel"],
                rows[column],
                marker=POLICY_MARKERS.get(policy, "o"),
                color="0.75",
                s=14,
                zorder=1,
            )
        for method in named:
            for policy, rows in unlimited[unlimited["method"] == method].groupby(
                "policy", sort=False
            ):
                ax.scatter(
                    rows["machine_time_rel"],
                    rows[column],
                    marker=POLICY_MARKERS.get(policy, "o"),
                    color=colours[method],
                    edgecolor="black",
                    linewidth=0.4,
                    s=46,
                    zorder=2,
                    label=f"{method}, {policy}",
                )
        values = unlimited[column].dropna()
        pad = max(0.02, 0.08 * (values.max() - values.min()))
        ax.set_ylim(max(0.0, values.min() - pad), min(1.0, values.max() + pad) + 1e-9)
        ax.set_xlabel("machine time / no mitigation (ratio)")
        ax.set_ylabel(f"PoCD at D = {d:g} x reference JCT (share of jobs)")
        ax.set_title(f"deadline D = {d:g} x reference JCT", fontsize=10)
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="center left",
        bbox_to_anchor=(1.0, 0.5),
        fontsize=8,
        frameon=False,
        title="method, policy (grey: all other methods)",
        title_fontsize=8,
    )
    note = (
        f"; D = {', '.join(f'{d:g}' for d in dropped)} left out: every PoCD within "
        f"{MIN_VISIBLE_SPREAD:g}"
        if dropped
        else ""
    )
    fig.suptitle(
        f"PoCD against machine time, {dataset}, protocol {protocol}, unlimited machines{note}",
        fontsize=11,
    )
    fig.tight_layout()
    save_figure(fig, path, dpi=130, bbox_inches="tight")
    plt.close(fig)


def _interval_errors(rows: pd.DataFrame, metric: str) -> np.ndarray | None:
    lo, hi = f"{metric}_lo", f"{metric}_hi"
    if lo not in rows or hi not in rows:
        return None
    below = (rows[metric] - rows[lo]).clip(lower=0).fillna(0)
    above = (rows[hi] - rows[metric]).clip(lower=0).fillna(0)
    return np.vstack([below.to_numpy(), above.to_numpy()])


def _scores_panel(ax, table3: pd.DataFrame, dataset: str) -> None:
    rows = table3[table3["dataset"] == dataset].copy()
    rows["privileged"] = rows["privileged"].astype(bool)
    online = rows[~rows["privileged"]].sort_values("F1", ascending=True, kind="stable")
    privileged = rows[rows["privileged"]].sort_values("F1", ascending=True, kind="stable")
    ordered = pd.concat([online, privileged], ignore_index=True)
    # privileged methods above a gap, so they read as a separate group
    y = np.arange(len(ordered), dtype=float)
    y[len(online) :] += 1.0
    metrics = [("F1", "tab:blue", "o", -0.17)]
    if "early_F1" in ordered:
        metrics.append(("early_F1", "tab:orange", "s", 0.17))
    for metric, colour, marker, offset in metrics:
        ax.errorbar(
            ordered[metric],
            y + offset,
            xerr=_interval_errors(ordered, metric),
            fmt=marker,
            color=colour,
            markersize=4,
            elinewidth=1,
            capsize=2,
            label=metric.replace("_", "-") + " [interval]",
        )
    labels = [
        f"{m} (privileged)" if p else m
        for m, p in zip(ordered["method"], ordered["privileged"], strict=True)
    ]
    ax.set_yticks(y, labels, fontsize=7)
    for tick, method in zip(ax.get_yticklabels(), ordered["method"], strict=True):
        if method in REFERENCE_METHODS:
            tick.set_fontweight("bold")
    if len(privileged):
        ax.axhline(len(online), color="0.5", linewidth=0.8, linestyle=":")
    ax.set_xlim(-0.02, 1.02)  # a score of 0 or 1 keeps its whole marker
    ax.set_xlabel("score (mean over jobs, 0-1)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(f"{dataset}: F1 and early-F1 per method", fontsize=10)


def _jct_panel(ax, policies: pd.DataFrame, table3: pd.DataFrame, dataset: str) -> None:
    """JCT reduction per policy for the Oracle, NURD and the best online method by F1."""
    rows = policies[
        (policies["dataset"] == dataset)
        & (policies["machines"].astype(str) == "unlimited")
        & (policies["policy"] != "none")
    ]
    scores = table3[(table3["dataset"] == dataset) & ~table3["privileged"].astype(bool)]
    best = scores.sort_values("F1", ascending=False, kind="stable")["method"].head(1).tolist()
    methods = list(dict.fromkeys([*REFERENCE_METHODS, *best]))
    methods = [m for m in methods if m in set(rows["method"])]
    policy_names = list(dict.fromkeys(rows["policy"]))
    height = 0.6 / max(1, len(methods))
    colours = {"NURD": "black", "Oracle": "0.6"}
    for i, method in enumerate(methods):
        part = rows[rows["method"] == method].set_index("policy").reindex(policy_names)
        y = np.arange(len(policy_names)) + (i - (len(methods) - 1) / 2) * height
        ax.barh(
            y,
            part["reduction"],
            height,
            xerr=_interval_errors(part, "reduction"),
            color=colours.get(method, "tab:green"),
            error_kw={"elinewidth": 0.8, "capsize": 2},
            label=method if method in REFERENCE_METHODS else f"{method} (best F1)",
        )
    ax.set_yticks(np.arange(len(policy_names)), policy_names, fontsize=8)
    ax.set_ylabel("mitigation policy")
    ax.axvline(0, color="black", linewidth=0.6)
    ax.set_xlabel("mean JCT reduction (fraction; > 0 = jobs finish sooner)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    ax.set_title(f"{dataset}: JCT change per mitigation policy", fontsize=10)


def plot_overview(
    table3: pd.DataFrame,
    policies: pd.DataFrame,
    path,
    datasets: Sequence[str],
    protocol: str,
) -> None:
    """One row per dataset: every method's F1 and early-F1 with their intervals, sorted,
    privileged methods apart; beside it the JCT reduction per mitigation policy."""
    plt = pyplot()
    n_methods = max(len(table3[table3["dataset"] == d]) for d in datasets)
    height = max(4.0, 0.2 * n_methods + 1.2)
    fig, axes = plt.subplots(
        len(datasets),
        2,
        figsize=(13, height * len(datasets)),
        squeeze=False,
        gridspec_kw={"width_ratios": [1.3, 1]},
    )
    for (score_ax, jct_ax), dataset in zip(axes, datasets, strict=True):
        _scores_panel(score_ax, table3, dataset)
        _jct_panel(jct_ax, policies, table3, dataset)
    fig.suptitle(
        f"What this run found (protocol {protocol}): prediction scores and job completion time",
        fontsize=12,
    )
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
