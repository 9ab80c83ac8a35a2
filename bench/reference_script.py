"""Audit step 0 against the authors' own scripts, job by job and task by task.

    python bench/reference_script.py [--script PATH/run_ts.py] [--od-script PATH/run_od.py]
        [--config config/config.yaml] [--converted resources/converted]
        [--datasets google-synthetic alibaba-synthetic] [--alphas 0 0.5] [--n-jobs 0]
        [--only-jobs ID ...] [--out bench/out/reference_script] [--real-baselines]

`PATH/run_ts.py` and `PATH/run_od.py` are copies of `code/run_ts.py` and `code/run_od.py` of
y-ding/nurd-mlsys22-code that you supply (with `utils_ts.py` and `tobit.py` beside them, as in
that repository); nothing of them is part of this repository. Give either or both. Run after
`snakemake` has converted the datasets (`--converted`, default resources/converted/; a
dataset of kind `nurd-timeseries` without one there is converted once into
`<out>/<dataset>/converted`, as the workflow converts it). The real baselines of run_ts.py
need the optional extra: `pip install -e '.[reference]'`.

For every dataset and job (the first `--n-jobs` by id, as the audit; 0 = all):

1. The converted job is written in the scripts' input layout: `<out>/<dataset>/input/<job>/<i>`,
   one headerless 22-column CSV per task i (its position in our job), one row per window in
   time order, ST / ET counted from the task's start (stragglers.formats.datasets.SCRIPT_LAYOUT;
   windows longer than the dataset's aligned step (replay.aligned_window, else its checkpoint_interval) cut into pieces, missing values 0,
   evictions / failures per window: what `replay.protocol: paper` reads, docs/protocols.md).
   A dataset of kind `nurd-timeseries` is already in that layout: the scripts read its own
   files (its raw folder of job folders, or its `.tar.gz` archives extracted once, bytes
   unchanged, into `<out>/<dataset>/raw`); nothing is converted for them.
   Columns the dataset has no value for are 0 (the scripts drop constant columns).
2. The scripts run on it, in this process (run_ts.py once per gamma, `--alphas`), with only
   these run-time shims (nothing in the files is edited):
   - both: `pandas.DataFrame.append` (removed in pandas 2.0) as `pandas.concat`, which is what
     it did;
   - run_ts.py: the baseline-only imports (`imblearn`, `pulearn`, `KTBoost`) and the Tobit
     model: unless `--real-baselines`, its PU, Tobit and Grabit baselines are replaced by stubs
     predicting 0. They fill their own prediction lists only; NURD (its `ipw`), NURD-NC
     (`ipwnc`) and GBTR (`gb`) do not read them, and no random state is shared (GBR has
     random_state=42, lbfgs is deterministic). A package that is not installed is always
     stubbed and left out of the comparison (KTBoost 0.2.2 does not import with the
     pipeline's scikit-learn: it uses old private tree internals, `sklearn.tree._tree.DTYPE`
     and `_criterion.FriedmanMSE`; so Grabit is not compared). With `--real-baselines` they run as written (PU-EN, PU-BG: pulearn; Tobit:
     the script's tobit.py; Grabit: KTBoost) and are compared too; the one shim there is
     `BaggingPuClassifier(base_estimator=...)`, pulearn's keyword before 0.1, passed as
     `estimator` (pulearn 0.2 rejects the old name), and tobit.py's LinearRegression fed
     its frame as an array (scikit-learn >= 1.2 rejects its mix of int and str column
     names; older versions ignored the names). PU-BG, Tobit and Grabit get the guard of
     run_od.py below: a fit or predict that raises at a step flags nothing there (pulearn
     0.2's BaggingPuClassifier raises when a bag leaves no out-of-bag row, on the small
     early training sets); Elkan-Noto is not guarded, the script catches its failure itself.
   - run_od.py: its missing `from utils_ts import *` (it calls fun_df_cumsum, get_TPR_FPR and
     get_PCT_new without importing them) is supplied by putting utils_ts's names in its
     namespace; and a guard around its fourteen detectors, the documented reading of a
     detector that raises: a detector whose fit or predict raises at a time step flags
     nothing at that step (unguarded, the script stops at its first step on every job:
     LSCP, CBLOF, KNN, SOD and COF raise on training sets of 3-16 tasks). The guard wraps
     the script's outer calls only; a detector that another one uses inside (LSCP's LOFs)
     raises as usual to that outer detector.
   The scripts write no results (their `to_csv` lines are commented out), so their scores
   are read from their own `get_TPR_FPR` calls (run_ts.py: gb, ipwnc, ipw, en, bg, tb, kt;
   run_od.py: its `clf_list` order), with the per-task flags these calls receive.
3. The pipeline's audit step 0 (`replay.protocol: paper`, no overrides) runs the same methods
   on the same jobs: NURD with alpha = gamma and epsilon 0.05, NURD-NC and GBTR (and PU-EN,
   PU-BG, Tobit, Grabit with `--real-baselines`) for run_ts.py, the fourteen PyOD baselines
   for run_od.py, each with the config's parameters.

Writes `<out>/<dataset>/comparison.csv` (one row per job, method and alpha: script and
pipeline TPR / FPR / F1, equal or not, `tasks_differing`: the tasks scored by either side
whose flag differs, matched by task index, the file name; the script's are read from its own
lists, `test_idx_init` / `test_idx_gap` at `good_stra_idx` / `good_gap_idx`, ours are the
task position for a layout written here and the converted `task_id` for a nurd-timeseries
job, whose positions follow the tasks' starts; and CPU seconds, `time.process_time`:
`script_cpu_s` the method's model calls in the script, run_ts.py's NURD and NURD-NC counting
the GBR they reweight and the propensity fit they share, `script_job_cpu_s` the script's
whole run of the job, every method and the reading, and `pipeline_cpu_s` step 0's replay of
the job with the method), `<out>/speed.csv` (CPU seconds, script against pipeline, their
ratio and the target 10x, at two levels: `level` job, per job each script's whole run against
the pipeline's replays it stands for, run_od.py against the fourteen PyOD detectors together,
run_ts.py at each gamma against NURD; `level` method, per job and method the method's model
calls in the script against the pipeline's replay of the job with the method) and
`<out>/summary.md` (a table per level), and prints the summary.

Both sides run in one thread (OMP_NUM_THREADS and the BLAS variables set to 1 before numpy
loads, unless already set), as Snakemake runs a `threads: 1` job: CPU seconds are compared,
and with the libraries' default threads on 2 cores the scripts' CPU more than doubles
(run_ts.py's on six jobs: 12.0 CPU s in one thread, 31.7 with the defaults), idle BLAS
threads included.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # before numpy loads: as Snakemake sets them

import argparse  # noqa: E402
import contextlib  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402
import sys  # noqa: E402
import tarfile  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stragglers.convert.nurd_timeseries import ARCHIVE_SUFFIX, raw_entries  # noqa: E402
from stragglers.convert.nurd_timeseries import KIND as NURD_KIND  # noqa: E402
from stragglers.convert.one_process import convert_dataset  # noqa: E402
from stragglers.evaluate.metrics import job_metrics  # noqa: E402
from stragglers.formats.datasets import (  # noqa: E402
    FEATURES_BY_KIND,
    SCRIPT_COLUMNS,
    SCRIPT_LAYOUT,
    last_columns,
)
from stragglers.formats.jobs import iter_shard_jobs, read_manifest  # noqa: E402
from stragglers.methods import _gradient_boosting  # noqa: E402
from stragglers.methods._library_swap import swapped_attributes  # noqa: E402
from stragglers.replay import aligned  # noqa: E402
from stragglers.replay.core import dataset_replay  # noqa: E402
from stragglers.replay.service import (  # noqa: E402
    JobSelection,
    MethodRun,
    replay_methods,
    replay_settings,
)
from stragglers.report.audit import audit_jobs  # noqa: E402

SCRIPT_METHODS = ("gb", "ipwnc", "ipw", "en", "bg", "tb", "kt")  # its get_TPR_FPR call order
COMPARED = {"GBTR": "gb", "NURD-NC": "ipwnc", "NURD": "ipw"}
REAL_BASELINES = {"PU-EN": "en", "PU-BG": "bg", "Tobit": "tb", "Grabit": "kt"}
# run_od.py's clf_list (its get_TPR_FPR call order) -> our method names
OD_METHODS = {
    "abod": "ABOD",
    "cblof": "CBLOF",
    "hbos": "HBOS",
    "iforest": "IFOREST",
    "knn": "KNN",
    "lof": "LOF",
    "mcd": "MCD",
    "ocsvm": "OCSVM",
    "pca": "PCA",
    "sos": "SOS",
    "lscp": "LSCP",
    "cof": "COF",
    "sod": "SOD",
    "xgbod": "XGBOD",
}
EQUAL = 1e-9
STUBBED_BY_PACKAGE = {"pulearn": ("PU-EN", "PU-BG"), "KTBoost.KTBoost": ("Grabit",)}
STUBBED: set[str] = set()  # real baselines that could not run (load_script)
# CPU seconds (time.process_time) of the scripts' model calls in the current run, by model:
# run_ts.py gb (its GradientBoostingRegressor), lr (the LogisticRegression NURD and NURD-NC
# share), en, bg, tb, kt; run_od.py its clf_list names
SCRIPT_CPU: dict[str, float] = {}
# a run_ts.py method's CPU: the models it calls (NURD and NURD-NC reweight GBTR's predictions
# with the one propensity fit they share)
TS_CPU_PARTS = {"gb": ("gb",), "ipwnc": ("gb", "lr"), "ipw": ("gb", "lr")}


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


def raw_script_input(raw_dir: Path, folder: Path) -> Path:
    """A nurd-timeseries dataset's own files, as the scripts read them (`<dir>/<job>/<task
    index>`): its raw folder of job folders as it is, or its `.tar.gz` archives extracted once
    into `folder` (each member's bytes written unchanged to `<job>/<task index>`)."""
    entries = raw_entries(raw_dir)
    if not entries[0].endswith(ARCHIVE_SUFFIX):
        return raw_dir
    done = folder / ".extracted"
    if done.is_file() and done.read_text() == "\n".join(entries):
        return folder
    for entry in entries:
        with tarfile.open(raw_dir / entry, "r:gz") as archive:
            for member in archive:
                parts = Path(member.name).parts
                if not member.isfile() or any(p.startswith(".") for p in parts):
                    continue
                target = folder / parts[-2] / parts[-1]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.extractfile(member).read())
    done.write_text("\n".join(entries))
    return folder


def converted_folder(config: dict, dataset: str, args) -> Path:
    """`--converted`'s folder of the dataset; for a nurd-timeseries dataset without one, the
    dataset converted once into the benchmark's out folder (as the workflow converts it)."""
    entry = config["datasets"][dataset]
    converted = args.converted / dataset
    if (converted / "manifest.parquet").is_file():
        return converted
    if entry["kind"] != NURD_KIND:
        raise SystemExit(f"--converted: no {converted / 'manifest.parquet'}; run snakemake first")
    converted = args.out / dataset / "converted"
    if not (converted / "manifest.parquet").is_file():
        convert_dataset(
            kind=NURD_KIND,
            raw_dir=str(dataset_raw_dir(entry)),
            out_dir=str(converted),
            dataset=dataset,
            n_shards=int(entry.get("n_shards", 1)),
            min_tasks=int(entry.get("min_tasks", 100)),
            latency_definition=entry.get("latency_definition", "schedule_to_finish"),
        )
    return converted


def dataset_raw_dir(entry: dict) -> Path:
    raw = Path(entry["raw_dir"])
    return raw if raw.is_absolute() else ROOT / raw


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


def _restore_append() -> None:
    if not hasattr(pd.DataFrame, "append"):

        def append(self, other, ignore_index=False):  # pandas < 2.0's DataFrame.append
            return pd.concat([self, other], ignore_index=ignore_index)

        pd.DataFrame.append = append


def script_flags(pred, alpha: float) -> np.ndarray:
    """The per-task flags get_TPR_FPR scores: flagged at any step but the last (row -2 of its
    cumulative matrix), in the script's test order (stragglers first)."""
    return (np.asarray(pred, dtype=float) >= alpha)[:-1].any(axis=0)


def scored_task_indices(names: dict) -> list[int] | None:
    """The task index (file name) of each task the scripts score, in their test order: the
    stragglers kept (`test_idx_init` at `good_stra_idx`) then the gap tasks kept (`test_idx_gap`
    at `good_gap_idx`), read from the calling main()'s own variables (None if absent)."""
    try:
        stragglers = [names["test_idx_init"][i] for i in names["good_stra_idx"]]
        gap = [names["test_idx_gap"][i] for i in names["good_gap_idx"]]
    except (KeyError, IndexError, TypeError):
        return None
    return [int(i) for i in stragglers + gap]


def _record_scores(module) -> list:
    """Wrap the module's get_TPR_FPR; the returned list collects ((TPR, FPR, FNR, AUC, F1),
    per-task flags, their task indices or None) of each call."""
    scores: list[tuple] = []
    original = module.get_TPR_FPR

    def recording(pred, alpha, n_stra):
        result = original(pred, alpha, n_stra)
        flags = script_flags(pred, alpha)
        indices = scored_task_indices(sys._getframe(1).f_locals)
        if indices is not None and len(indices) != len(flags):
            indices = None
        scores.append((result, flags, indices))
        return result

    module.get_TPR_FPR = recording
    return scores


def _exec_script(path: Path, name: str, namespace: dict | None = None):
    sys.path.insert(0, str(path.parent))  # its utils_ts.py and tobit.py
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(namespace or {})
    spec.loader.exec_module(module)
    return module


def load_script(path: Path, real_baselines: bool):
    """run_ts.py as a module, with the shims of the module docstring; returns (module, scores)
    where `scores` collects each get_TPR_FPR call (see _record_scores)."""
    _restore_append()
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
            # a baseline whose package does not import is stubbed and left out of the
            # comparison (KTBoost 0.2.2 uses old private scikit-learn internals)
            STUBBED.update(STUBBED_BY_PACKAGE.get(name, ()))
    if "KTBoost.KTBoost" in sys.modules and not hasattr(sys.modules["KTBoost"], "KTBoost"):
        sys.modules["KTBoost"].KTBoost = sys.modules["KTBoost.KTBoost"]
    module = _exec_script(path, "nurd_run_ts")
    if real_baselines and _importable("pulearn"):
        import pulearn

        def bagging_pu(base_estimator=None, **kwargs):  # pulearn < 0.1's keyword
            return pulearn.BaggingPuClassifier(estimator=base_estimator, **kwargs)

        # predicting 1 (finished) flags nothing: the script flags 1 - prediction (PU-BG)
        # and, where Elkan-Noto failed, 0.5 - prediction / 2 (PU-EN)
        module.BaggingPuClassifier = _guarded_factory(bagging_pu, quiet=1)
    if real_baselines and "tobit" in sys.modules:
        from sklearn.linear_model import LinearRegression

        class PlainLinearRegression(LinearRegression):
            """scikit-learn < 1.2 ignored column names; tobit.py's mix of int and str
            names ('intercept') now raises."""

            def fit(self, X, y, sample_weight=None):
                return super().fit(np.asarray(X), y, sample_weight)

            def predict(self, X):
                return super().predict(np.asarray(X))

        sys.modules["tobit"].LinearRegression = PlainLinearRegression
    if real_baselines:
        # a predicted latency of 0 is below tau: flags nothing
        module.TobitModel = _guarded_factory(module.TobitModel, quiet=0.0)
        booster = getattr(module.KTBoost, "BoostingRegressor", None)
        if booster is not None and booster is not _StubBaseline:
            module.KTBoost = types.SimpleNamespace(
                BoostingRegressor=_guarded_factory(booster, quiet=0.0)
            )
    if not real_baselines:
        for name in ("ElkanotoPuClassifier", "BaggingPuClassifier", "TobitModel"):
            setattr(module, name, _StubBaseline)
        module.KTBoost = types.SimpleNamespace(BoostingRegressor=_StubBaseline)
    timed = {
        "GradientBoostingRegressor": "gb",
        "LogisticRegression": "lr",
        "ElkanotoPuClassifier": "en",
        "BaggingPuClassifier": "bg",
        "TobitModel": "tb",
    }
    for name, key in timed.items():
        setattr(module, name, _timed_factory(getattr(module, name), key))
    module.KTBoost = types.SimpleNamespace(
        BoostingRegressor=_timed_factory(module.KTBoost.BoostingRegressor, "kt")
    )
    return module, _record_scores(module)


class _Timed:
    """A model whose fit / predict / predict_proba CPU seconds add up in SCRIPT_CPU[key]
    (its results unchanged)."""

    def __init__(self, model, key: str):
        self._model, self._key = model, key

    def _call(self, name, *args, **kwargs):
        began = time.process_time()
        try:
            return getattr(self._model, name)(*args, **kwargs)
        finally:
            SCRIPT_CPU[self._key] = SCRIPT_CPU.get(self._key, 0.0) + time.process_time() - began

    def fit(self, *args, **kwargs):
        self._call("fit", *args, **kwargs)
        return self

    def predict(self, *args, **kwargs):
        return self._call("predict", *args, **kwargs)

    def predict_proba(self, *args, **kwargs):
        return self._call("predict_proba", *args, **kwargs)


def _timed_factory(make, key: str):
    return lambda *args, **kwargs: _Timed(make(*args, **kwargs), key)


class _GuardedModel:
    """A baseline model whose fit or predict, if it raises, predicts `quiet` (a value that
    flags nothing) at that step, as the guard of the PyOD detectors below."""

    def __init__(self, model, quiet: float):
        self.model, self.quiet, self.failed = model, quiet, False

    def fit(self, *args, **kwargs):
        try:
            self.model.fit(*args, **kwargs)
            self.failed = False
        except Exception:
            self.failed = True
        return self

    def predict(self, X):
        if not self.failed:
            try:
                return np.asarray(self.model.predict(X))
            except Exception:
                pass
        return np.full(len(X), self.quiet)


def _guarded_factory(make, quiet: float):
    return lambda *args, **kwargs: _GuardedModel(make(*args, **kwargs), quiet)


_GUARD_DEPTH = [0]  # nesting of guarded calls: only the script's own (outermost) call is guarded


def guarded(cls, key: str | None = None):
    """`cls` whose fit and predict, called by the script, never raise: a failed fit or
    predict flags nothing (zeros) at that step. Calls nested inside another guarded call
    (LSCP fitting its LOFs) raise as usual, to the outer detector. The script's own calls'
    CPU seconds add up in SCRIPT_CPU[key] (default: the class name)."""
    key = key or cls.__name__

    def spent(began: float) -> None:
        if _GUARD_DEPTH[0] == 1:
            SCRIPT_CPU[key] = SCRIPT_CPU.get(key, 0.0) + time.process_time() - began

    class Guarded(cls):
        _guard_failed = False

        def fit(self, X, y=None):
            _GUARD_DEPTH[0] += 1
            began = time.process_time()
            try:
                super().fit(X, y)
                self._guard_failed = False
            except Exception:
                if _GUARD_DEPTH[0] > 1:
                    raise
                self._guard_failed = True
            finally:
                spent(began)
                _GUARD_DEPTH[0] -= 1
            return self

        def predict(self, X, *args, **kwargs):
            if self._guard_failed:
                return np.zeros(len(X), dtype=int)
            _GUARD_DEPTH[0] += 1
            began = time.process_time()
            try:
                return super().predict(X, *args, **kwargs)
            except Exception:
                if _GUARD_DEPTH[0] > 1:
                    raise
                return np.zeros(len(X), dtype=int)
            finally:
                spent(began)
                _GUARD_DEPTH[0] -= 1

    Guarded.__name__ = Guarded.__qualname__ = cls.__name__
    return Guarded


OD_CLASSES = (
    "ABOD",
    "CBLOF",
    "HBOS",
    "IForest",
    "KNN",
    "LOF",
    "MCD",
    "OCSVM",
    "PCA",
    "SOS",
    "LSCP",
    "COF",
    "SOD",
    "XGBOD",
)


def load_od_script(path: Path):
    """run_od.py as a module, with the shims of the module docstring; (module, scores)."""
    _restore_append()
    sys.path.insert(0, str(path.parent))
    utils = importlib.import_module("utils_ts")
    public = {k: v for k, v in vars(utils).items() if not k.startswith("_")}  # import *
    module = _exec_script(path, "nurd_run_od", public)
    for name, key in zip(OD_CLASSES, OD_METHODS):
        setattr(module, name, guarded(getattr(module, name), key))
    return module, _record_scores(module)


def run_script(
    module, scores: list, data: Path, job_id: str, gamma: float | None, log: Path, names
) -> dict:
    """{script method: (TPR, FPR, F1, per-task flags, their task indices, CPU seconds of the
    method's models)} for one job (and gamma: run_ts.py; None: run_od.py), rates as
    fractions, and "job_cpu_s": the CPU seconds of the whole run (reading, every method)."""
    scores.clear()
    SCRIPT_CPU.clear()
    scratch = log.parent / "script-out"
    scratch.mkdir(parents=True, exist_ok=True)
    argv = sys.argv
    sys.argv = ["run.py", "--data_path", f"{data}/", "--jobid", job_id, "--out", str(scratch)]
    if gamma is not None:
        sys.argv += ["--gamma", repr(float(gamma))]
    text = io.StringIO()
    began = time.process_time()
    try:
        with contextlib.redirect_stdout(text):
            module.main()
    finally:
        sys.argv = argv
        log.write_text(text.getvalue())
    job_cpu = time.process_time() - began
    if len(scores) != len(names):
        raise RuntimeError(
            f"job {job_id}: the script scored {len(scores)} methods, expected {len(names)}"
        )
    result: dict = {
        name: (
            s[0] / 100.0,
            s[1] / 100.0,
            float(s[4]),
            flags,
            indices,
            sum(SCRIPT_CPU.get(part, 0.0) for part in TS_CPU_PARTS.get(name, (name,))),
        )
        for name, (s, flags, indices) in zip(names, scores)
    }
    result["job_cpu_s"] = job_cpu
    return result


# ---------------------------------------------------------------------------------------------
# 3. the pipeline's step 0, and the comparison


def task_keys(job, kind: str) -> np.ndarray:
    """Each task position's name in the scripts' input: its task index, the file name. For a
    nurd-timeseries dataset that is the converted job's task_id (the job sorts its tasks by
    start, so positions are not indices); for the layout written here, the position."""
    if kind == NURD_KIND:
        return job.task_id.astype(np.int64)
    return np.arange(job.n_tasks)


def tasks_differing(script: dict, ours: dict) -> int:
    """Tasks (by task index) scored by either side whose flag differs, a task scored by one
    side only counting as differing."""
    return sum(script.get(task) != ours.get(task) for task in set(script) | set(ours))


def timed_tree_growing(spent: list[float]) -> contextlib.AbstractContextManager[None]:
    """Adds to `spent` the CPU seconds the gradient boosting's stages take to grow their
    trees (`grow_boosting_stages`, under `paper` for the NURD family): work the pipeline
    repeats exactly to keep the script's trees, so the script's CPU over it bounds the
    pipeline's ratio while that code stays as it is."""
    grow = _gradient_boosting.grow_boosting_stages

    def timed(*args, **kwargs):
        began = time.process_time()
        try:
            return grow(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - began

    return swapped_attributes(_gradient_boosting, grow_boosting_stages=timed)


def pipeline_step0(
    jobs, kind: str, converted: Path, replay: dict, seed: int, dataset: str, method, params
) -> pd.DataFrame:
    """Per job: step 0's metrics (under `protocol: paper` on `replay`, the dataset's grid), its
    per-task flags in the scripts' test order ("flags": stragglers first, each group by task
    index), the same by task index ("flags_by_task") and the CPU seconds of the job's replay
    ("cpu_s"), of which growing the gradient-boosted trees ("tree_builder_cpu_s")."""
    frames = []
    for job in jobs:
        builder = [0.0]
        began = time.process_time()
        with timed_tree_growing(builder):
            (run,) = replay_methods(
                converted,
                kind,
                [MethodRun(method, method, params)],
                dataset=dataset,
                seed=seed,
                replay=replay,
                protocol="paper",
                selection=JobSelection(jobs=(job,)),
            )
        cpu = time.process_time() - began
        tasks, rows = run.tasks, run.jobs
        metrics = job_metrics(tasks, rows).set_index("job_id")
        scored = tasks[tasks["evaluated"]].copy()
        scored["task_index"] = task_keys(job, kind)[scored["task"].to_numpy()]
        scored = scored.sort_values(["is_straggler", "task_index"], ascending=[False, True])
        flags = scored["flagged"].to_numpy(bool)
        metrics["flags"] = [flags]
        metrics["flags_by_task"] = [dict(zip(scored["task_index"].tolist(), flags.tolist()))]
        metrics["cpu_s"] = cpu
        metrics["tree_builder_cpu_s"] = builder[0]
        frames.append(metrics)
    return pd.concat(frames)


def comparison_row(dataset, job_id, method, alpha, mine, theirs, job_cpu=np.nan) -> dict:
    row = {
        "dataset": dataset,
        "job_id": job_id,
        "method": method,
        "alpha": alpha,
        "pipeline_status": mine["status"],
        "pipeline_TPR": mine["TPR"],
        "pipeline_FPR": mine["FPR"],
        "pipeline_F1": mine["F1"],
        "pipeline_cpu_s": mine["cpu_s"],
        "pipeline_tree_builder_cpu_s": mine["tree_builder_cpu_s"],
    }
    if isinstance(theirs, str):
        row.update(script_error=theirs)
        return row
    tpr, fpr, f1, flags, indices, cpu = theirs
    if indices is not None:  # by task index
        differing = tasks_differing(dict(zip(indices, flags.tolist())), mine["flags_by_task"])
    else:  # the scored sets in the scripts' test order
        ours = mine["flags"]
        differing = int((flags != ours).sum()) if len(flags) == len(ours) else np.nan
    row.update(
        script_TPR=tpr,
        script_FPR=fpr,
        script_F1=f1,
        script_error="",
        tasks_differing=differing,
        # CPU seconds: the method's model calls in the script (run_ts.py's NURD and NURD-NC:
        # GBTR's GBR and the propensity fit), the script's whole run of the job (every
        # method, and reading), and the pipeline's replay of the job with this method
        script_cpu_s=cpu,
        script_job_cpu_s=job_cpu,
    )
    return row


def run_jobs(module, scores, jobs, data: Path, out: Path, gamma, names, tag: str) -> dict:
    """{job id: the script's run_script result, or its error as text}."""
    results = {}
    for job in jobs:
        log = out / "logs" / f"{job.job_id}-{tag}.txt"
        log.parent.mkdir(parents=True, exist_ok=True)
        try:
            results[job.job_id] = run_script(module, scores, data, job.job_id, gamma, log, names)
        except Exception as error:  # reported, not hidden
            results[job.job_id] = f"{type(error).__name__}: {error}"
    return results


def selected_job_ids(config: dict, dataset: str, args) -> list[str]:
    """The dataset's jobs the comparison runs: the first --n-jobs by id, of those --only-jobs."""
    converted = converted_folder(config, dataset, args)
    job_ids = audit_jobs(read_manifest(converted), args.n_jobs)
    if args.only_jobs:
        job_ids = [j for j in job_ids if j in set(args.only_jobs)]
    return job_ids


def compare_dataset(
    config: dict, dataset: str, args, scripts: dict, job_ids: list[str]
) -> pd.DataFrame:
    entry = config["datasets"][dataset]
    kind = entry["kind"]
    converted = converted_folder(config, dataset, args)
    merged = dataset_replay(config["replay"], entry)
    settings = replay_settings(merged, protocol="paper")
    jobs = list(iter_shard_jobs(converted, kind, None, only_jobs=job_ids))
    out = args.out / dataset
    if kind == NURD_KIND:  # the scripts read the dataset's own files
        data = raw_script_input(dataset_raw_dir(entry), out / "raw")
    else:  # the converted jobs written in the scripts' layout
        data = out / "input"
        for job in jobs:
            write_layout(job, kind, settings.aligned_step, data / job.job_id)

    def ours(method, params):
        params = {**(config["methods"].get(method) or {}), **params}
        return pipeline_step0(
            jobs, kind, converted, merged, config["seed"], dataset, method, params
        )

    def row(job, method, alpha, mine, result, name):
        theirs = result if isinstance(result, str) else result[name]
        job_cpu = np.nan if isinstance(result, str) else result["job_cpu_s"]
        return comparison_row(dataset, job.job_id, method, alpha, mine, theirs, job_cpu)

    rows = []
    if "ts" in scripts:
        module, scores = scripts["ts"]
        real = {m: n for m, n in REAL_BASELINES.items() if m not in STUBBED}
        compared = {**COMPARED, **(real if args.real_baselines else {})}
        for alpha in args.alphas:
            began = time.perf_counter()
            script = run_jobs(module, scores, jobs, data, out, alpha, SCRIPT_METHODS, f"ts{alpha}")
            print(f"{dataset} run_ts.py gamma {alpha}: {time.perf_counter() - began:.0f} s")
            methods = {"NURD": {"alpha": float(alpha), "epsilon": 0.05}}
            if alpha == args.alphas[0]:  # the others do not depend on gamma
                methods.update({m: {} for m in compared if m != "NURD"})
            for method, params in methods.items():
                mine = ours(method, params)
                for job in jobs:
                    alpha_of = float(alpha) if method == "NURD" else np.nan
                    rows.append(
                        row(
                            job,
                            method,
                            alpha_of,
                            mine.loc[job.job_id],
                            script[job.job_id],
                            compared[method],
                        )
                    )
    if "od" in scripts:
        module, scores = scripts["od"]
        began = time.perf_counter()
        script = run_jobs(module, scores, jobs, data, out, None, tuple(OD_METHODS), "od")
        print(f"{dataset} run_od.py: {time.perf_counter() - began:.0f} s", flush=True)
        for name, method in OD_METHODS.items():
            mine = ours(method, {})
            for job in jobs:
                rows.append(
                    row(job, method, np.nan, mine.loc[job.job_id], script[job.job_id], name)
                )
    frame = pd.DataFrame(rows)
    for column in ("script_TPR", "script_FPR", "script_F1", "tasks_differing"):
        if column not in frame:
            frame[column] = np.nan
    diff = np.maximum.reduce(
        [
            (frame[f"script_{m}"] - frame[f"pipeline_{m}"]).abs().fillna(np.inf).to_numpy()
            for m in ("TPR", "FPR", "F1")
        ]
    )
    frame["equal"] = diff <= EQUAL
    frame["abs_F1_difference"] = (frame["script_F1"] - frame["pipeline_F1"]).abs()
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "comparison.csv", index=False)
    return frame


SPEED_TARGET = 10  # the pipeline's CPU per job at least 10x below the script's


def speed(frame: pd.DataFrame) -> pd.DataFrame:
    """CPU seconds, script against pipeline, per dataset and job at two levels.

    `level` "job": each script's whole run of the job (reading, every method) against the
    pipeline's replays it stands for: run_od.py against the fourteen PyOD detectors together
    (their `pipeline_cpu_s` summed), run_ts.py at each gamma against NURD at that alpha.
    `level` "method": per job and method, the method's own model calls in the script
    (`script_cpu_s`; run_ts.py's NURD and NURD-NC count the GBR they reweight and the
    propensity fit) against the pipeline's replay of the job with that method.
    The ratio script / pipeline and whether it reaches SPEED_TARGET; jobs the script raised
    on are left out. `ratio_bound_same_trees`: the script's CPU over the pipeline's CPU in
    growing the script's gradient-boosted trees (NURD, NURD-NC, GBTR; empty for the others),
    the ratio the pipeline would reach if growing them were all it did."""
    if "script_job_cpu_s" not in frame:
        return pd.DataFrame()
    rows = []
    od = frame[frame["method"].isin(list(OD_METHODS.values()))]
    for (dataset, job_id), part in od.groupby(["dataset", "job_id"], sort=False):
        rows.append(
            {
                "level": "job",
                "dataset": dataset,
                "job_id": job_id,
                "compared": f"run_od.py / the {part['method'].nunique()} PyOD detectors",
                "alpha": np.nan,
                "script_cpu_s": part["script_job_cpu_s"].iloc[0],
                "pipeline_cpu_s": part["pipeline_cpu_s"].sum(),
            }
        )
    for _, row in frame[frame["method"] == "NURD"].iterrows():
        rows.append(
            {
                "level": "job",
                "dataset": row["dataset"],
                "job_id": row["job_id"],
                "compared": "run_ts.py / NURD",
                "alpha": row["alpha"],
                "script_cpu_s": row["script_job_cpu_s"],
                "pipeline_cpu_s": row["pipeline_cpu_s"],
                "pipeline_tree_builder_cpu_s": row["pipeline_tree_builder_cpu_s"],
            }
        )
    if "script_cpu_s" in frame:
        for _, row in frame.iterrows():
            script = "run_od.py" if row["method"] in OD_METHODS.values() else "run_ts.py"
            rows.append(
                {
                    "level": "method",
                    "dataset": row["dataset"],
                    "job_id": row["job_id"],
                    "compared": f"{script}'s {row['method']} model calls / {row['method']}",
                    "alpha": row["alpha"],
                    "script_cpu_s": row["script_cpu_s"],
                    "pipeline_cpu_s": row["pipeline_cpu_s"],
                    "pipeline_tree_builder_cpu_s": row["pipeline_tree_builder_cpu_s"],
                }
            )
    # a job the script could not score (it raised: no script CPU) has no ratio
    table = pd.DataFrame(rows).dropna(subset=["script_cpu_s"]) if rows else pd.DataFrame()
    if len(table):
        table["ratio"] = table["script_cpu_s"] / table["pipeline_cpu_s"]
        table["target_met"] = table["ratio"] >= SPEED_TARGET
        # the ratio if the pipeline spent nothing beyond growing the script's trees
        builder = table["pipeline_tree_builder_cpu_s"].where(
            table["pipeline_tree_builder_cpu_s"] > 0
        )
        table["ratio_bound_same_trees"] = table["script_cpu_s"] / builder
    return table


def speed_summary(table: pd.DataFrame) -> list[str]:
    """The speed table's lines, one table per level: per dataset and comparison, the jobs'
    CPU seconds summed on each side and the smallest, median and overall ratio."""
    if not len(table):
        return []
    headings = {
        "job": "CPU seconds per job, the script's whole run of the job (reading, every method) "
        "against the pipeline's replays of it",
        "method": "CPU seconds per job and method, the method's own model calls in the script "
        "against the pipeline's replay of the job with the method",
    }
    lines = []
    for level, part in table.groupby("level", sort=False):
        lines += [
            "",
            f"{headings[level]} (target: {SPEED_TARGET}x):",
            "",
            "| dataset | script / pipeline | alpha | jobs | CPU s script | CPU s pipeline | "
            "ratio of sums | smallest ratio | median ratio | jobs at target | "
            "CPU s growing the script's trees | ratio of sums bound by them |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        lines += table_rows(
            part,
            "compared",
            lambda rows: (
                f"{rows['script_cpu_s'].sum():.1f} | {rows['pipeline_cpu_s'].sum():.1f} | "
                f"{rows['script_cpu_s'].sum() / rows['pipeline_cpu_s'].sum():.1f} | "
                f"{rows['ratio'].min():.1f} | {rows['ratio'].median():.1f} | "
                f"{int(rows['target_met'].sum())} of {len(rows)} | " + tree_builder_cells(rows)
            ),
        )
    return lines


def tree_builder_cells(rows: pd.DataFrame) -> str:
    """The pipeline's CPU seconds growing the script's trees and the script's CPU over
    them (the highest ratio reachable while growing them at that cost), or dashes when the
    pipeline grew none."""
    builder = rows["pipeline_tree_builder_cpu_s"].sum()
    if not builder > 0:
        return "- | -"
    return f"{builder:.1f} | {rows['script_cpu_s'].sum() / builder:.1f}"


def table_rows(frame: pd.DataFrame, key: str, cells) -> list[str]:
    """One markdown row per dataset, `key` and alpha: those, the rows' count, then
    `cells(part)`."""
    rows = []
    for (dataset, name, alpha), part in frame.groupby(
        ["dataset", key, "alpha"], dropna=False, sort=False
    ):
        alpha_text = "-" if pd.isna(alpha) else f"{alpha:g}"
        rows.append(f"| {dataset} | {name} | {alpha_text} | {len(part)} | {cells(part)} |")
    return rows


def summary(frame: pd.DataFrame) -> str:
    lines = [
        "| dataset | method | alpha | jobs | mean F1 script | mean F1 step 0 | "
        "jobs equal | jobs with equal task flags | largest F1 gap | CPU s script | CPU s step 0 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += table_rows(
        frame,
        "method",
        lambda part: (
            f"{part['script_F1'].mean():.3f} | "
            f"{part['pipeline_F1'].mean():.3f} | {int(part['equal'].sum())} of {len(part)} | "
            f"{int((part['tasks_differing'] == 0).sum())} | "
            f"{part['abs_F1_difference'].max():.3f} | "
            f"{part.get('script_cpu_s', pd.Series(dtype=float)).sum():.1f} | "
            f"{part['pipeline_cpu_s'].sum():.1f}"
        ),
    )
    lines += speed_summary(speed(frame))
    if STUBBED:
        lines += ["", f"Not compared (their package does not import): {', '.join(sorted(STUBBED))}"]
    od = frame[frame["method"].isin(list(OD_METHODS.values()))]
    if len(od):
        lines += ["", "run_od.py, (job, detector) pairs equal to 1e-9:", ""]
        for dataset, part in od.groupby("dataset", sort=False):
            lines.append(f"- {dataset}: {int(part['equal'].sum())} of {len(part)}")
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
    parser.add_argument("--script", type=Path, help="your copy of code/run_ts.py")
    parser.add_argument("--od-script", type=Path, help="your copy of code/run_od.py")
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    parser.add_argument(
        "--converted",
        type=Path,
        default=ROOT / "resources" / "converted",
        help="folder of the converted datasets (<dataset>/manifest.parquet)",
    )
    parser.add_argument("--datasets", nargs="*", help="default: every dataset of the config")
    parser.add_argument(
        "--alphas",
        nargs="*",
        type=float,
        default=[0.0, 0.5],
        help="the script's gamma = NURD's alpha",
    )
    parser.add_argument("--n-jobs", type=int, default=0, help="first jobs by id; 0 = all")
    parser.add_argument("--only-jobs", nargs="*", help="of those, only these job ids")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "reference_script")
    parser.add_argument(
        "--real-baselines",
        action="store_true",
        help="run the script's PU / Tobit / Grabit baselines instead of stubs",
    )
    args = parser.parse_args(argv)
    if args.script is None and args.od_script is None:
        parser.error("give --script (run_ts.py), --od-script (run_od.py) or both")
    for option, path in (("--script", args.script), ("--od-script", args.od_script)):
        if path is not None and not path.is_file():
            parser.error(f"{option}: no file {path}")
    if args.n_jobs < 0:
        parser.error("--n-jobs must be >= 0")
    if any(a < 0 for a in args.alphas):
        parser.error("--alphas must be >= 0")
    config = yaml.safe_load(args.config.read_text())
    datasets = args.datasets or list(config["datasets"])
    unknown = [d for d in datasets if d not in config["datasets"]]
    if unknown:
        parser.error(f"--datasets: {unknown} not in {args.config}")
    scripts = {}
    if args.script is not None:
        scripts["ts"] = load_script(args.script.resolve(), args.real_baselines)
    if args.od_script is not None:
        scripts["od"] = load_od_script(args.od_script.resolve())
    selected = {d: selected_job_ids(config, d, args) for d in datasets}
    if args.only_jobs:
        found = {j for ids in selected.values() for j in ids}
        missing = [j for j in args.only_jobs if j not in found]
        if missing:
            parser.error(f"--only-jobs: {missing} in none of the datasets {datasets}")
    # a dataset none of --only-jobs belongs to is left out
    frames = [compare_dataset(config, d, args, scripts, ids) for d, ids in selected.items() if ids]
    if not frames:
        parser.error(f"no job to compare in {datasets}")
    frame = pd.concat(frames, ignore_index=True)
    text = summary(frame)
    args.out.mkdir(parents=True, exist_ok=True)
    speed(frame).to_csv(args.out / "speed.csv", index=False)
    (args.out / "summary.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
