"""LASER's two networks and Algorithm 2 (laser.txt §IV-B, §V-B, Table I): small pure pieces.

torch is imported inside the functions that need it, so importing this module (the registry
imports every method file) costs nothing for the other methods.

- `fit_regressor` / `predict_regressor`: a fully connected network with PReLU activations,
  trained full-batch with Adam on the L1 loss (least absolute deviations, as the paper),
  inputs standardised with the training mean and spread. Seeded and deterministic on CPU:
  `torch.manual_seed`, deterministic algorithms, one thread (restored afterwards); torch's
  Adam update without its bookkeeping (`_torch_training`).
- `task_training_set`: the task-time network's examples (see the function).
- `simulate_resume`: outcomes of speculative resume with r + 1 attempts, the examples of the
  job-time / machine-time network (see the function).
- `choose_attempts`: Algorithm 2, U(r) = 1{T <= D} - theta C M.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stragglers.methods._torch_training import Adam, reproducible_torch


@dataclass
class Regressor:
    """A fitted network plus the standardisation it was trained with."""

    network: object  # torch.nn.Sequential
    input_mean: np.ndarray
    input_scale: np.ndarray


def _build(n_inputs: int, n_outputs: int, hidden_layers: int, width: int):
    import torch

    layers: list = []
    size = n_inputs
    for _ in range(hidden_layers):
        layers += [torch.nn.Linear(size, width), torch.nn.PReLU()]
        size = width
    layers.append(torch.nn.Linear(size, n_outputs))
    return torch.nn.Sequential(*layers)


def _forward_calls(network) -> list[tuple]:
    """The functions `network`'s layers call in their forward, with their parameters, in
    order: the same operations as calling the network, without a module call per layer."""
    import torch

    calls = []
    for layer in network:
        if isinstance(layer, torch.nn.Linear):
            calls.append((torch.nn.functional.linear, (layer.weight, layer.bias)))
        elif isinstance(layer, torch.nn.PReLU):
            calls.append((torch.nn.functional.prelu, (layer.weight,)))
        else:
            raise TypeError(f"_forward_calls: no call for layer {layer!r}")
    return calls


def fit_regressor(
    inputs: np.ndarray,
    targets: np.ndarray,
    hidden_layers: int,
    width: int,
    epochs: int,
    learning_rate: float,
    seed: int,
) -> Regressor:
    """Fit a PReLU network with Adam on the L1 loss; targets (n,) or (n, k)."""
    import torch

    inputs = np.asarray(inputs, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.float64)
    if targets.ndim == 1:
        targets = targets[:, None]
    if inputs.ndim != 2 or len(inputs) != len(targets) or len(inputs) == 0:
        raise ValueError(
            f"fit_regressor: inputs {inputs.shape} and targets {targets.shape} "
            "must be non-empty with one row each per example"
        )
    if not (np.isfinite(inputs).all() and np.isfinite(targets).all()):
        raise ValueError("fit_regressor: inputs and targets must be finite")
    mean = inputs.mean(axis=0)
    scale = inputs.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)  # a constant column stays 0 after centring
    with reproducible_torch(seed):
        network = _build(inputs.shape[1], targets.shape[1], hidden_layers, width)
        x = torch.as_tensor((inputs - mean) / scale, dtype=torch.float32)
        y = torch.as_tensor(targets, dtype=torch.float32)
        optimiser = Adam(network.parameters(), lr=learning_rate)
        forward = _forward_calls(network)
        for _ in range(epochs):
            optimiser.zero_grad()
            output = x
            for function, parameters in forward:
                output = function(output, *parameters)
            # torch.nn.L1Loss() (mean) without the module call
            loss = torch.nn.functional.l1_loss(output, y)
            loss.backward()
            optimiser.step()
    return Regressor(network.eval(), mean, scale)


def predict_regressor(model: Regressor, inputs: np.ndarray) -> np.ndarray:
    """(n, k) predictions (k = number of targets)."""
    import torch

    x = (np.asarray(inputs, dtype=np.float64) - model.input_mean) / model.input_scale
    with torch.no_grad():
        return model.network(torch.as_tensor(x, dtype=torch.float32)).numpy().astype(np.float64)


def task_training_set(
    finished_features: np.ndarray,
    finished_latency: np.ndarray,
    elapsed_fractions: np.ndarray,
    snapshot_features: np.ndarray,
    snapshot_elapsed: np.ndarray,
    snapshot_latency: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Examples (features, elapsed) -> execution time for the task-time network.

    Two sources, both of finished tasks only (their latency is known):
    - snapshots: what the method saw of a task while it ran at an earlier checkpoint (features
      so far, elapsed time then), labelled once the task finished: the paper's records "at
      tau_est";
    - each finished task at elapsed = f x its latency for every f in `elapsed_fractions`, with
      its final features (the replay's features are duration-weighted means, so a running
      task's are of the same kind). Without them the network would have nothing to learn from
      at the first prediction checkpoint (no snapshot has finished yet), and they tell it
      that a task's execution time is never below its elapsed time.
    Returns (inputs (n, d + 1) with elapsed last, targets (n,))."""
    finished_features = np.asarray(finished_features, dtype=np.float64)
    finished_latency = np.asarray(finished_latency, dtype=np.float64)
    fractions = np.asarray(elapsed_fractions, dtype=np.float64)
    grid_features = np.repeat(finished_features, len(fractions), axis=0)
    grid_elapsed = np.outer(finished_latency, fractions).ravel()
    grid_latency = np.repeat(finished_latency, len(fractions))
    inputs = np.vstack(
        [
            np.column_stack([grid_features, grid_elapsed]),
            np.column_stack(
                [
                    np.asarray(snapshot_features, dtype=np.float64).reshape(
                        len(snapshot_elapsed), finished_features.shape[1]
                    ),
                    snapshot_elapsed,
                ]
            ),
        ]
    )
    targets = np.concatenate([grid_latency, np.asarray(snapshot_latency, dtype=np.float64)])
    keep = np.isfinite(inputs).all(axis=1) & np.isfinite(targets)
    return inputs[keep], targets[keep]


def simulate_resume(
    r: int,
    elapsed: np.ndarray,
    estimate: np.ndarray,
    deadline: float,
    finished_latency: np.ndarray,
    kill_delay: float,
    n_draws: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Job execution time and machine time of the running tasks under speculative resume.

    Per draw: a running task whose estimated execution time exceeds `deadline` is killed now
    (at its elapsed time, tau_est) and r + 1 attempts continue its remaining share
    1 - elapsed / estimate of the work, each taking that share of a latency drawn from the
    job's finished latencies; the fastest is kept and the others are killed when it ends or at
    tau_kill = tau_est + kill_delay, whichever is first (laser.txt Fig. 2). Other tasks run for
    their estimate. Job time = the longest task execution time (the tasks' clocks start at
    their own starts, as the deadline does); machine time = the sum over tasks of all their
    attempts' machine-seconds. Returns (job_time (n_draws,), machine_time (n_draws,))."""
    elapsed = np.asarray(elapsed, dtype=np.float64)
    estimate = np.maximum(np.asarray(estimate, dtype=np.float64), elapsed)
    straggler = estimate > deadline
    with np.errstate(divide="ignore", invalid="ignore"):
        remaining = np.where(estimate > 0, 1.0 - elapsed / estimate, 1.0)
    draws = rng.choice(
        np.asarray(finished_latency, dtype=np.float64), size=(n_draws, len(elapsed), r + 1)
    )
    attempts = remaining[None, :, None] * draws
    fastest = attempts.min(axis=2)
    resumed_time = elapsed[None, :] + fastest
    resumed_machine = resumed_time + r * np.minimum(fastest, kill_delay)
    task_time = np.where(straggler[None, :], resumed_time, estimate[None, :])
    machine = np.where(straggler[None, :], resumed_machine, estimate[None, :])
    return task_time.max(axis=1), machine.sum(axis=1)


def choose_attempts(
    job_time: np.ndarray, machine_time: np.ndarray, deadline: float, theta_cost: float
) -> tuple[int, np.ndarray]:
    """Algorithm 2: r maximising U(r) = 1{T_r <= D} - theta C M_r over r = 0..len - 1.

    Ties keep the smallest r (strict >, as in the paper's pseudocode). Returns (r, U)."""
    job_time = np.asarray(job_time, dtype=np.float64)
    machine_time = np.asarray(machine_time, dtype=np.float64)
    utility = (job_time <= deadline).astype(np.float64) - theta_cost * machine_time
    best = 0
    for r in range(len(utility)):
        if utility[r] > utility[best]:
            best = r
    return best, utility
