"""Audit step 0 against the authors' own script, job by job.

    python bench/reference_script.py --script PATH/run_ts.py [--config config/config.yaml]
        [--datasets google-synthetic alibaba-synthetic] [--alphas 0 0.5] [--n-jobs 0]
        [--out bench/out/reference_script] [--real-baselines]

`PATH/run_ts.py` is a copy of `code/run_ts.py` of y-ding/nurd-mlsys22-code that you supply
(with `utils_ts.py` and `tobit.py` beside it, as in that repository); nothing of it is part of
this repository. Run after `snakemake` has converted the datasets (resources/converted/).

For every dataset and job (the first `--n-jobs` by id, as the audit; 0 = all):

1. The converted job is written in the script's input layout: `<out>/<dataset>/input/<job>/<i>`,
   one headerless 22-column CSV per task i (its position in our job), one row per window in
   time order, ST / ET counted from the task's start (stragglers.formats.datasets.SCRIPT_LAYOUT; windows longer than the dataset's
   checkpoint_interval cut into pieces, missing values 0, evictions / failures per window:
   what `replay.protocol: paper` reads, docs/protocols.md). Columns the dataset has no value
   for are 0 (the script drops constant columns).
2. The script runs on it, in this process, once per gamma (`--alphas`), with only these
   run-time shims (nothing in the file is edited):
   - `pandas.DataFrame.append` (removed in pandas 2.0) as `pandas.concat`, which is what it did;
   - the baseline-only imports (`imblearn`, `pulearn`, `KTBoost`) and the Tobit model: unless
     `--real-baselines`, its PU, Tobit and Grabit baselines are replaced by stubs predicting 0.
     They fill their own prediction lists only; NURD (its `ipw`), NURD-NC (`ipwnc`) and GBTR
     (`gb`) do not read them, and no random state is shared (GBR has random_state=42, lbfgs
     is deterministic). A package that is not installed is always stubbed.
   The script writes no results (its `to_csv` lines are commented out), so its scores are
   read from its own `get_TPR_FPR` calls (gb, ipwnc, ipw, en, bg, tb, kt in that order).
3. The pipeline's audit step 0 (`replay.protocol: paper`, no overrides) runs NURD with
   alpha = gamma and epsilon 0.05, NURD-NC and GBTR on the same jobs.

Writes `<out>/<dataset>/comparison.csv` (one row per job, method and alpha: script and
pipeline TPR / FPR / F1, equal or not) and `<out>/summary.md`, and prints the summary.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import sys
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stragglers import evaluate  # noqa: E402
from stragglers.formats.datasets import (  # noqa: E402
    FEATURES_BY_KIND,
    SCRIPT_COLUMNS,
    SCRIPT_LAYOUT,
    last_columns,
)
from stragglers.formats.jobs import iter_shard_jobs, read_manifest  # noqa: E402
from stragglers.methods import get_method  # noqa: E402
from stragglers.replay import aligned  # noqa: E402
from stragglers.replay.core import ReplaySettings  # noqa: E402
from stragglers.replay.runner import run_method_on_jobs  # noqa: E402
from stragglers.report.audit import audit_jobs  # noqa: E402
from stragglers.rules.predict import replay_settings  # noqa: E402

SCRIPT_METHODS = ("gb", "ipwnc", "ipw", "en", "bg", "tb", "kt")  # its get_TPR_FPR call order
COMPARED = {"GBTR": "gb", "NURD-NC": "ipwnc", "NURD": "ipw"}
EQUAL = 1e-9


# ---------------------------------------------------------------------------------------------
# 1. the script's input layout


def task_tables(job, kind: str, interval: float) -> list[np.ndarray]:
    """One (windows, 22) array per task position in the script's layout."""
    order = np.lexsort((job.window_start, job.window_task))
    task = job.window_task[order]
    values = job.window_features[order].astype(float)
    last = last_columns(kind)
    if last.any():
        values[:, last] = aligned.per_window_counts(task, values[:, last])
    task, duration, values = aligned.split_windows(
        task, (job.window_end - job.window_start)[order], values, interval
    )
    values = np.where(np.isnan(values), 0.0, values)  # the authors' fillna(0)
    columns = [f.column for f in FEATURES_BY_KIND[kind]]
    unmapped = [c for c in columns if c not in SCRIPT_COLUMNS]
    if unmapped:
        raise ValueError(f"kind {kind!r}: columns {unmapped} have no place in the script's layout")
    place = [SCRIPT_LAYOUT.index(SCRIPT_COLUMNS[c]) for c in columns]
    # ST / ET: the window's offset from its task's start, so that the script's ET - ST is the
    # duration exactly (with the trace's fractional start times it differed in the last bits,
    # which reordered tasks of equal latency: 104 ties in one Google synthetic job)
    start = pd.Series(duration).groupby(task).cumsum().to_numpy() - duration
    table = np.zeros((len(task), len(SCRIPT_LAYOUT)))
    table[:, 0], table[:, 1] = start, start + duration
    table[:, 3] = task
    table[:, place] = values
    bounds = np.r_[0, np.cumsum(np.bincount(task, minlength=job.n_tasks))]
    return [table[bounds[i] : bounds[i + 1]] for i in range(job.n_tasks)]


def write_layout(job, kind: str, interval: float, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, table in enumerate(task_tables(job, kind, interval)):
        np.savetxt(folder / str(i), table, delimiter=",", fmt="%.17g")


# ---------------------------------------------------------------------------------------------
# 2. the script, with its run-time shims


class _StubBaseline:
    """A baseline the comparison does not read: fits nothing, predicts 0."""

    def __init__(self, *args, **kwargs):
        pass

    def fit(self, *args, **kwargs):
        return self

    def predict(self, features):
        return np.zeros(len(features))


def _stub_module(name: str, **attributes) -> None:
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    sys.modules[name] = module


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
        return True
    except Exception:
        return False


def load_script(path: Path, real_baselines: bool):
    """The script as a module, with the shims of the module docstring; returns (module, scores)
    where `scores` collects the (TPR, FPR, FNR, AUC, F1) of each get_TPR_FPR call."""
    if not hasattr(pd.DataFrame, "append"):

        def append(self, other, ignore_index=False):  # pandas < 2.0's DataFrame.append
            return pd.concat([self, other], ignore_index=ignore_index)

        pd.DataFrame.append = append
    stubs = {
        "imblearn": {},
        "imblearn.over_sampling": {"SMOTE": _StubBaseline},
        "imblearn.under_sampling": {"RandomUnderSampler": _StubBaseline},
        "pulearn": {"ElkanotoPuClassifier": _StubBaseline, "BaggingPuClassifier": _StubBaseline},
        "KTBoost": {},
        "KTBoost.KTBoost": {"BoostingRegressor": _StubBaseline},
    }
    for name, attributes in stubs.items():
        if not _importable(name):
            _stub_module(name, **attributes)
    if "KTBoost.KTBoost" in sys.modules and not hasattr(sys.modules["KTBoost"], "KTBoost"):
        sys.modules["KTBoost"].KTBoost = sys.modules["KTBoost.KTBoost"]
    sys.path.insert(0, str(path.parent))  # its utils_ts.py and tobit.py
    spec = importlib.util.spec_from_file_location("nurd_run_ts", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not real_baselines:
        for name in ("ElkanotoPuClassifier", "BaggingPuClassifier", "TobitModel"):
            setattr(module, name, _StubBaseline)
        module.KTBoost = types.SimpleNamespace(BoostingRegressor=_StubBaseline)
    scores: list[tuple] = []
    original = module.get_TPR_FPR

    def recording(pred, alpha, n_stra):
        result = original(pred, alpha, n_stra)
        scores.append(result)
        return result

    module.get_TPR_FPR = recording
    return module, scores


def run_script(module, scores: list, data: Path, job_id: str, gamma: float, log: Path) -> dict:
    """{script method: (TPR, FPR, F1)} for one job and gamma (rates as fractions)."""
    scores.clear()
    scratch = log.parent / "script-out"
    scratch.mkdir(parents=True, exist_ok=True)
    argv = sys.argv
    sys.argv = [
        "run_ts.py",
        "--data_path",
        f"{data}/",
        "--jobid",
        job_id,
        "--gamma",
        repr(float(gamma)),
        "--out",
        str(scratch),
    ]
    text = io.StringIO()
    try:
        with contextlib.redirect_stdout(text):
            module.main()
    finally:
        sys.argv = argv
        log.write_text(text.getvalue())
    if len(scores) != len(SCRIPT_METHODS):
        raise RuntimeError(f"job {job_id}: the script scored {len(scores)} methods, expected 7")
    return {
        name: (s[0] / 100.0, s[1] / 100.0, float(s[4])) for name, s in zip(SCRIPT_METHODS, scores)
    }


# ---------------------------------------------------------------------------------------------
# 3. the pipeline's step 0, and the comparison


def pipeline_step0(
    jobs, kind: str, settings: ReplaySettings, seed: int, dataset: str, method: str, params: dict
) -> pd.DataFrame:
    tasks, rows = run_method_on_jobs(
        iter(jobs), get_method(method), params, settings, last_columns(kind), seed, dataset
    )
    return evaluate.job_metrics(tasks, rows).set_index("job_id")


def compare_dataset(config: dict, dataset: str, args, module, scores) -> pd.DataFrame:
    entry = config["datasets"][dataset]
    kind = entry["kind"]
    converted = ROOT / "resources" / "converted" / dataset
    settings = replay_settings(entry, config["replay"])
    settings = ReplaySettings(**{**settings.__dict__, "protocol": "paper", "overrides": None})
    job_ids = audit_jobs(read_manifest(converted), args.n_jobs)
    jobs = list(iter_shard_jobs(converted, kind, None, only_jobs=job_ids))
    out = args.out / dataset
    data = out / "input"
    for job in jobs:
        write_layout(job, kind, settings.checkpoint_interval, data / job.job_id)
    rows = []
    for alpha in args.alphas:
        began = time.perf_counter()
        script = {}
        for job in jobs:
            log = out / "logs" / f"{job.job_id}-gamma{alpha}.txt"
            log.parent.mkdir(parents=True, exist_ok=True)
            try:
                script[job.job_id] = run_script(module, scores, data, job.job_id, alpha, log)
            except Exception as error:  # reported, not hidden
                script[job.job_id] = f"{type(error).__name__}: {error}"
        script_seconds = time.perf_counter() - began
        methods = {"NURD": {"alpha": float(alpha), "epsilon": 0.05}}
        if alpha == args.alphas[0]:  # GBTR and NURD-NC do not depend on gamma
            methods.update({"NURD-NC": {}, "GBTR": {}})
        for method, params in methods.items():
            ours = pipeline_step0(jobs, kind, settings, config["seed"], dataset, method, params)
            for job in jobs:
                theirs = script[job.job_id]
                row = {
                    "dataset": dataset,
                    "job_id": job.job_id,
                    "method": method,
                    "alpha": float(alpha) if method == "NURD" else np.nan,
                }
                mine = ours.loc[job.job_id]
                row.update(
                    pipeline_status=mine["status"],
                    pipeline_TPR=mine["TPR"],
                    pipeline_FPR=mine["FPR"],
                    pipeline_F1=mine["F1"],
                )
                if isinstance(theirs, str):
                    row.update(script_error=theirs)
                else:
                    tpr, fpr, f1 = theirs[COMPARED[method]]
                    row.update(script_TPR=tpr, script_FPR=fpr, script_F1=f1, script_error="")
                rows.append(row)
        print(
            f"{dataset} alpha {alpha}: script {script_seconds:.0f} s for {len(jobs)} jobs",
            flush=True,
        )
    frame = pd.DataFrame(rows)
    diff = np.maximum.reduce(
        [
            (frame[f"script_{m}"] - frame[f"pipeline_{m}"]).abs().fillna(np.inf).to_numpy()
            for m in ("TPR", "FPR", "F1")
        ]
    )
    frame["equal"] = diff <= EQUAL
    frame["abs_F1_difference"] = (frame["script_F1"] - frame["pipeline_F1"]).abs()
    frame.to_csv(out / "comparison.csv", index=False)
    return frame


def summary(frame: pd.DataFrame) -> str:
    lines = [
        "| dataset | method | alpha | jobs | mean F1 script | mean F1 step 0 | "
        "jobs equal | largest F1 gap |",
        "|---|---|---|---|---|---|---|---|",
    ]
    keys = ["dataset", "method", "alpha"]
    for (dataset, method, alpha), part in frame.groupby(keys, dropna=False, sort=False):
        alpha_text = "-" if pd.isna(alpha) else f"{alpha:g}"
        lines.append(
            f"| {dataset} | {method} | {alpha_text} | {len(part)} | {part['script_F1'].mean():.3f} | "
            f"{part['pipeline_F1'].mean():.3f} | {int(part['equal'].sum())} of {len(part)} | "
            f"{part['abs_F1_difference'].max():.3f} |"
        )
    differing = frame[~frame["equal"]]
    if len(differing):
        lines += ["", "Jobs that differ:", ""]
        for _, row in differing.iterrows():
            alpha = "" if pd.isna(row["alpha"]) else f" alpha {row['alpha']:g}"
            lines.append(
                f"- {row['dataset']} {row['job_id']} {row['method']}{alpha}: F1 script "
                f"{row['script_F1']:.3f} / step 0 {row['pipeline_F1']:.3f}, TPR "
                f"{row['script_TPR']:.3f} / {row['pipeline_TPR']:.3f}, FPR "
                f"{row['script_FPR']:.3f} / {row['pipeline_FPR']:.3f}"
                + (f" ({row['script_error']})" if row.get("script_error") else "")
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--script", required=True, type=Path, help="your copy of code/run_ts.py")
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    parser.add_argument("--datasets", nargs="*", help="default: every dataset of the config")
    parser.add_argument(
        "--alphas",
        nargs="*",
        type=float,
        default=[0.0, 0.5],
        help="the script's gamma = NURD's alpha",
    )
    parser.add_argument("--n-jobs", type=int, default=0, help="first jobs by id; 0 = all")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "reference_script")
    parser.add_argument(
        "--real-baselines",
        action="store_true",
        help="run the script's PU / Tobit / Grabit baselines instead of stubs",
    )
    args = parser.parse_args(argv)
    if not args.script.is_file():
        parser.error(f"--script: no file {args.script}")
    if args.n_jobs < 0:
        parser.error("--n-jobs must be >= 0")
    if any(a < 0 for a in args.alphas):
        parser.error("--alphas must be >= 0")
    config = yaml.safe_load(args.config.read_text())
    datasets = args.datasets or list(config["datasets"])
    unknown = [d for d in datasets if d not in config["datasets"]]
    if unknown:
        parser.error(f"--datasets: {unknown} not in {args.config}")
    module, scores = load_script(args.script.resolve(), args.real_baselines)
    frames = [compare_dataset(config, d, args, module, scores) for d in datasets]
    text = summary(pd.concat(frames, ignore_index=True))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
