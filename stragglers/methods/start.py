"""START (Tuli et al., IEEE TSC 2021): an Encoder-LSTM predicts the Pareto parameters of the
job's task times; k_hat stragglers are expected; once n - k_hat tasks have finished, the rest
are flagged (its Algorithm 1). Formulas, inputs and adaptations: docs/methods.md ("START").

Network (the paper's shape): 4 fully connected encoder layers (softplus, as the paper;
`encoder_activation: relu` was this code's earlier choice), a 2-layer LSTM of 32
units, a fully connected output of 2 = the Pareto parameters; inputs are an exponential moving
average (weight `ema_weight` on the latest step) of the per-step input; MSE loss, Adam
(torch's update without its bookkeeping, `_torch_training`).

Input of one step (a checkpoint): the paper's task and host matrices (one row per task / host,
zero-padded) do not fit jobs of 100-400 tasks, so each is summarised to a fixed size:
- task matrix: mean and std of the sign-log features over the finished tasks and over the
  running tasks; shares of finished and running tasks; the finished latencies and running
  elapsed times over the smallest finished latency, in logs (mean, std, max);
- host matrix: mean and std of the sign-log machine state of the running tasks' machines
  (`Checkpoint.running_machine_state`, `stragglers.convert.machines`), absent when the dataset has
  none.

Outputs: (ln(beta / x_min), ln(alpha - 1)), x_min the smallest finished latency at that step,
so the targets are scale-free and alpha > 1 as START requires. Training (cross-job): every
earlier job that had finished by this job's first prediction gives one sequence, replayed on
the grid START predicts on (`stragglers.replay.wallclock.iterate_checkpoints` with this
dataset's checkpoint interval and grid origin, from the first checkpoint where
`start_fraction` of its tasks had finished, at most `max_steps` steps), with the target the
Pareto fitted by maximum likelihood to all its latencies. The inputs also hold latency /
elapsed log-ratio statistics the paper does not list (docs/methods.md). The model is
retrained when `refit_every` more jobs have finished (models are shared by the jobs that see
the same training set) on the latest `history_jobs` of them.
With fewer than `refit_every` earlier jobs there is no model: the job uses START-MLE's
censored fit instead and is counted (`fallback_jobs`, logged).
"""

from __future__ import annotations

import hashlib
import logging
import math
from typing import Any, ClassVar

import numpy as np

from stragglers.formats.datasets import last_columns
from stragglers.methods._start import ALPHA_MAX, ALPHA_MIN, clip_alpha, pareto_mle, start_rule
from stragglers.methods._torch_training import Adam, reproducible_torch
from stragglers.methods.base import Checkpoint, JobInfo, Param
from stragglers.methods.start_mle import StartMLE

log = logging.getLogger(__name__)


def signed_log(values: np.ndarray) -> np.ndarray:
    return np.sign(values) * np.log1p(np.abs(values))


def _mean_std(block: np.ndarray, width: int) -> np.ndarray:
    if block.shape[0] == 0 or width == 0:
        return np.zeros(2 * width)
    block = signed_log(np.nan_to_num(np.asarray(block, dtype=float)))
    return np.concatenate([block.mean(axis=0), block.std(axis=0)])


def _log_ratio_stats(values: np.ndarray, x_min: float) -> np.ndarray:
    if len(values) == 0:
        return np.zeros(3)
    ratio = np.log(np.maximum(np.asarray(values, dtype=float), x_min) / x_min)
    return np.array([ratio.mean(), ratio.std(), ratio.max()])


def step_input(
    n_tasks: int,
    finished_latency: np.ndarray,
    finished_features: np.ndarray,
    running_elapsed: np.ndarray,
    running_features: np.ndarray,
    running_machine_state: np.ndarray | None,
    n_features: int,
    n_machine_features: int,
) -> tuple[np.ndarray, float]:
    """One step's fixed-size input and x_min (smallest finished latency). Never reads a
    running task's latency: only its elapsed time and features."""
    x_min = float(np.min(finished_latency))
    if n_machine_features and running_machine_state is not None:
        host = _mean_std(np.asarray(running_machine_state, dtype=float), n_machine_features)
    else:
        host = np.zeros(2 * n_machine_features)
    vector = np.concatenate(
        [
            [len(finished_latency) / n_tasks, len(running_elapsed) / n_tasks],
            _log_ratio_stats(finished_latency, x_min),
            _log_ratio_stats(running_elapsed, x_min),
            _mean_std(np.asarray(finished_features).reshape(-1, n_features), n_features),
            _mean_std(np.asarray(running_features).reshape(-1, n_features), n_features),
            host,
        ]
    )
    return vector, x_min


def moving_average(sequence: np.ndarray, weight: float) -> np.ndarray:
    """Exponential moving average along axis 0: s_t = w x_t + (1 - w) s_{t-1}, s_0 = x_0."""
    out = np.array(sequence, dtype=float)
    for t in range(1, len(out)):
        out[t] = weight * out[t] + (1.0 - weight) * out[t - 1]
    return out


def _latest_machine_state(job, t: float, tasks: np.ndarray) -> np.ndarray | None:
    """The machine state of each task's latest window available by t
    (`Job.window_machine_state`), or None when the job has none."""
    state = getattr(job, "window_machine_state", None)
    if state is None or np.asarray(state).ndim != 2 or np.asarray(state).shape[1] == 0:
        return None
    stop = int(np.searchsorted(job.available_from, t, side="right"))
    latest = np.full(job.n_tasks, -1, dtype=np.int64)
    np.maximum.at(latest, job.window_task[:stop], np.arange(stop))
    rows = latest[tasks]
    out = np.full((len(tasks), state.shape[1]), np.nan)
    out[rows >= 0] = state[rows[rows >= 0]]
    return out


def job_sequence(
    job,
    checkpoints,
    max_steps: int,
    n_machine_features: int,
) -> tuple[np.ndarray, np.ndarray]:
    """A finished earlier job replayed on the grid START predicts on: `checkpoints` are the
    replay's own (JobHistory.checkpoints: every checkpoint interval from the grid origin, from
    the first one where `start_fraction` of its tasks had finished, nothing flagged); the first
    `max_steps` of them. Returns (inputs (T, D), x_min (T,))."""
    d = job.window_features.shape[1]
    inputs, minima = [], []
    for checkpoint in checkpoints:
        vector, x_min = step_input(
            job.n_tasks,
            checkpoint.finished_latency,
            checkpoint.finished_features,
            checkpoint.running_elapsed,
            checkpoint.running_features,
            checkpoint.running_machine_state,
            d,
            n_machine_features,
        )
        inputs.append(vector)
        minima.append(x_min)
        if len(inputs) >= max_steps:
            break
    if not inputs:  # no checkpoint after the start had a running task: nothing to learn
        return np.zeros((0, 0)), np.zeros(0)
    return np.array(inputs), np.array(minima)


# caches shared by the START instances of one process (one per job): sequences per earlier
# job, trained models per training set
_sequence_cache: dict[tuple, tuple[np.ndarray, np.ndarray, float, float]] = {}
_model_cache: dict[tuple, Any] = {}


ENCODER_ACTIVATIONS = ("softplus", "relu")


def _build_network(n_inputs: int, hidden: int, activation: str = "softplus"):
    import torch
    from torch import nn

    if activation not in ENCODER_ACTIVATIONS:
        raise ValueError(
            f"method START: encoder_activation must be one of "
            f"{ENCODER_ACTIVATIONS}, got {activation!r}"
        )
    act = nn.Softplus if activation == "softplus" else nn.ReLU

    class EncoderLSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Sequential(
                nn.Linear(n_inputs, 64),
                act(),
                nn.Linear(64, 64),
                act(),
                nn.Linear(64, hidden),
                act(),
                nn.Linear(hidden, hidden),
                act(),
            )
            self.lstm = nn.LSTM(hidden, hidden, num_layers=2, batch_first=True)
            self.output = nn.Linear(hidden, 2)

        def forward(self, x, state=None):
            out, state = self.lstm(self.encoder(x), state)
            return self.output(out), state

    del torch
    return EncoderLSTM()


def train_network(sequences: list[np.ndarray], targets: list[np.ndarray], params: dict, seed: int):
    """Fit the Encoder-LSTM on padded sequences (masked MSE over every valid step)."""
    # deterministic, one thread; the process's torch settings are restored afterwards (as
    # LASER's fit_regressor: a test of LASER's failed after START's tests had run)
    with reproducible_torch(seed):
        return _train(sequences, targets, params)


def _train(sequences: list[np.ndarray], targets: list[np.ndarray], params: dict):
    import torch

    stacked = np.vstack(sequences)
    mean, std = stacked.mean(axis=0), stacked.std(axis=0)
    std = np.where(std > 1e-8, std, 1.0)
    longest = max(len(s) for s in sequences)
    x = np.zeros((len(sequences), longest, stacked.shape[1]), dtype=np.float32)
    y = np.zeros((len(sequences), longest, 2), dtype=np.float32)
    mask = np.zeros((len(sequences), longest, 1), dtype=np.float32)
    for i, (seq, target) in enumerate(zip(sequences, targets)):
        x[i, : len(seq)] = (seq - mean) / std
        y[i, : len(seq)] = target
        mask[i, : len(seq)] = 1.0
    network = _build_network(
        stacked.shape[1], int(params["hidden"]), str(params.get("encoder_activation", "softplus"))
    )
    optimiser = Adam(network.parameters(), lr=float(params["learning_rate"]))
    xt, yt, mt = torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(mask)
    for _ in range(int(params["epochs"])):
        optimiser.zero_grad()
        predicted, _ = network(xt)
        loss = (((predicted - yt) ** 2) * mt).sum() / (2.0 * mt.sum())
        loss.backward()
        optimiser.step()
    network.eval()
    return network, mean, std, float(loss.detach())


class Start(StartMLE):
    name: ClassVar[str] = "START"
    family: ClassVar[str] = "Systems"
    uses_machine_state: ClassVar[bool] = True  # the host matrix: its machines' state
    cross_job: ClassVar[bool] = True
    defaults: ClassVar[dict[str, Any]] = {
        "history_jobs": Param(
            20, int, ge=1, doc="latest earlier jobs trained on (and K taken from)"
        ),  # latest earlier jobs trained on (and K taken from)
        "refit_every": Param(
            4, int, ge=1, doc="retrain once this many more earlier jobs have finished"
        ),  # retrain once this many more earlier jobs have finished
        "start_fraction": Param(
            0.04,
            float,
            gt=0,
            lt=1,
            doc="share of an earlier job's tasks finished when its training sequence starts",
        ),  # earlier jobs' sequences start as the replay's prediction does
        "max_steps": Param(
            128, int, ge=1, doc="longest training sequence, in steps of an earlier job"
        ),  # longest training sequence (steps of an earlier job)
        "ema_weight": Param(
            0.8, float, gt=0, le=1, doc="weight of the latest input in the moving average"
        ),  # weight of the latest input in the moving average (paper: lost)
        "hidden": Param(
            32, int, ge=1, doc="LSTM units per layer"
        ),  # LSTM units (paper: 2 layers of 32)
        "encoder_activation": Param(
            "softplus", str, choices=("softplus", "relu"), doc="activation of the encoder's layers"
        ),  # the encoder's 4 layers (paper: softplus)
        "epochs": Param(150, int, ge=1, doc="training epochs per fit"),
        "learning_rate": Param(0.003, float, gt=0, doc="Adam's step size"),
    }
    fallback_jobs: ClassVar[int] = 0
    trainings: ClassVar[int] = 0  # networks trained in this process

    def start_job(self, job: JobInfo) -> None:
        super().start_job(job)
        self.model = None
        self.state = None
        self.average = None
        self.n_machine_features = len(job.machine_state_names)

    def _training_ids(self, time: float) -> list[str]:
        finished = self.job.history.finished_before(time)
        every = int(self.params["refit_every"])
        usable = (len(finished) // every) * every
        ids = list(finished["job_id"].iloc[:usable])
        return ids[-int(self.params["history_jobs"]) :]

    def _sequence(self, job_id: str, time: float):
        history = self.job.history
        key = (
            str(history.converted_dir),
            job_id,
            self.params["start_fraction"],
            self.params["max_steps"],
            self.n_machine_features,
            self.job.checkpoint_interval,
            self.job.grid_origin,
        )
        if key not in _sequence_cache:
            job = history.load(job_id, time)
            checkpoints = history.checkpoints(
                job,
                last_columns(history.kind, history.converted_dir),
                float(self.params["start_fraction"]),
                float(self.job.checkpoint_interval),
                float(self.job.grid_origin),
                machine_state=self.n_machine_features > 0,
            )
            inputs, minima = job_sequence(
                job, checkpoints, int(self.params["max_steps"]), self.n_machine_features
            )
            beta, alpha = pareto_mle(job.latency)
            _sequence_cache[key] = (inputs, minima, beta, clip_alpha(alpha))
        return _sequence_cache[key]

    def _load_model(self, time: float) -> None:
        ids = self._training_ids(time)
        if not ids:
            type(self).fallback_jobs += 1
            log.info(
                "START job %s: fewer than %d earlier finished jobs, START-MLE's fit (fallback)",
                self.job.job_id,
                self.params["refit_every"],
            )
            return
        history = self.job.history
        key = (
            str(history.converted_dir),
            tuple(ids),
            self.n_machine_features,
            tuple(sorted(self.params.items())),
            self.job.checkpoint_interval,
            self.job.grid_origin,
            getattr(history, "seed", 0),
        )
        if key not in _model_cache:
            sequences, targets = [], []
            for job_id in ids:
                inputs, minima, beta, alpha = self._sequence(job_id, time)
                if len(minima) == 0:
                    continue
                sequences.append(moving_average(inputs, float(self.params["ema_weight"])))
                targets.append(
                    np.column_stack(
                        [
                            np.log(beta / minima),
                            np.full(len(minima), np.log(alpha - 1.0)),
                        ]
                    )
                )
            if not sequences:
                type(self).fallback_jobs += 1
                log.info(
                    "START job %s: no earlier job has a checkpoint to learn from, "
                    "START-MLE's fit (fallback)",
                    self.job.job_id,
                )
                return
            digest = hashlib.sha256("\x1f".join([str(key[-1]), *ids]).encode()).digest()
            seed = int.from_bytes(digest[:4], "little")
            _model_cache[key] = train_network(sequences, targets, self.params, seed)
            type(self).trainings += 1
            log.info(
                "START: trained on %d earlier jobs (loss %.4f)", len(ids), _model_cache[key][3]
            )
        self.model = _model_cache[key]

    def predict(self, checkpoint: Checkpoint) -> np.ndarray:
        if checkpoint.prescaled:
            raise ValueError(
                f"{self.name} fits a Pareto to latencies in seconds; "
                "the protocol's `scaling: final` rescales them"
            )
        if checkpoint.first_prediction:
            self._calibrate(checkpoint.time)
            self._load_model(checkpoint.time)
        if self.model is None:
            _, alpha = pareto_mle(checkpoint.finished_latency, checkpoint.running_elapsed)
        else:
            alpha = self._network_alpha(checkpoint)
        self.k_hat = self.expected_stragglers(alpha)
        return start_rule(
            self.job.n_tasks,
            len(checkpoint.finished_tasks),
            self.k_hat,
            len(checkpoint.running_tasks),
        )

    def _network_alpha(self, checkpoint: Checkpoint) -> float:
        import torch

        network, mean, std, _ = self.model
        vector, _ = step_input(
            self.job.n_tasks,
            checkpoint.finished_latency,
            checkpoint.finished_features,
            checkpoint.running_elapsed,
            checkpoint.running_features,
            getattr(checkpoint, "running_machine_state", None),
            len(self.job.feature_names),
            self.n_machine_features,
        )
        weight = float(self.params["ema_weight"])
        self.average = (
            vector if self.average is None else weight * vector + (1 - weight) * self.average
        )
        x = torch.from_numpy(((self.average - mean) / std).astype(np.float32)).view(1, 1, -1)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.no_grad():
                out, self.state = network(x, self.state)
        finally:
            torch.set_num_threads(threads)
        log_alpha_minus_one = float(out[0, 0, 1])
        alpha = 1.0 + math.exp(min(log_alpha_minus_one, math.log(ALPHA_MAX)))
        return float(min(max(alpha, ALPHA_MIN), ALPHA_MAX))
