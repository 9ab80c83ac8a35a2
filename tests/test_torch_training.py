"""stragglers/methods/_torch_training.py against the torch code it replaces: Adam's update
against torch.optim.Adam, bit for bit, and the fits of LASER and START against the same fits
run with torch.optim.Adam."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from stragglers.methods import _laser_model, start  # noqa: E402
from stragglers.methods._torch_training import Adam, reproducible_torch  # noqa: E402

SHAPES = [(), (1,), (3,), (17, 5), (5, 17), (33, 17), (16, 16), (2, 64), (129,), (4, 1, 3)]


def gradients(rng: np.random.Generator, shapes) -> list:
    """Gradients of mixed scales (1e-12 to 1e6), with exact zeros and repeated values."""
    out = []
    for shape in shapes:
        values = rng.normal(size=shape) * 10.0 ** rng.integers(-12, 7)
        if values.size > 2:
            flat = values.reshape(-1)
            flat[rng.integers(0, flat.size)] = 0.0
            flat[rng.integers(0, flat.size)] = flat[0]
        out.append(torch.as_tensor(values, dtype=torch.float32))
    return out


def run_both(replacement, lr: float, steps: int, seed: int, shapes=SHAPES):
    """Parameters and moments of torch.optim.Adam and of `replacement` after the same
    gradients, `steps` times."""
    rng = np.random.default_rng(seed)
    initial = [torch.as_tensor(rng.normal(size=s), dtype=torch.float32) for s in shapes]
    theirs = [torch.nn.Parameter(p.clone()) for p in initial]
    ours = [torch.nn.Parameter(p.clone()) for p in initial]
    library, replaced = torch.optim.Adam(theirs, lr=lr), replacement(ours, lr=lr)
    for _ in range(steps):
        library.zero_grad()
        replaced.zero_grad()
        for mine, reference, grad in zip(ours, theirs, gradients(rng, shapes)):
            reference.grad, mine.grad = grad.clone(), grad.clone()
        library.step()
        replaced.step()
    moments = [(library.state[p]["exp_avg"], library.state[p]["exp_avg_sq"]) for p in theirs]
    return theirs, ours, moments, replaced


def same(theirs, ours) -> bool:
    return all(
        torch.equal(a, b) and a.dtype == b.dtype and a.shape == b.shape
        for a, b in zip(theirs, ours, strict=True)
    )


@pytest.mark.parametrize("lr", [0.01, 0.003, 1e-4])
@pytest.mark.parametrize("seed", [0, 1])
def test_adam_equals_torch_adam_bit_for_bit(lr, seed):
    theirs, ours, moments, replaced = run_both(Adam, lr, steps=400, seed=seed)
    assert same(theirs, ours)
    sizes = [p.numel() for p in theirs]
    assert same(
        [m for m, _ in moments],
        [v.view(p.shape) for v, p in zip(replaced.exp_avg.split(sizes), theirs)],
    )
    assert same(
        [v for _, v in moments],
        [v.view(p.shape) for v, p in zip(replaced.exp_avg_sq.split(sizes), theirs)],
    )
    assert replaced.steps == 400


def test_adam_equals_torch_adam_on_one_parameter_and_tiny_ones():
    for shapes in ([(1,)], [()], [(1,), ()], [(40, 40)]):
        theirs, ours, _, _ = run_both(Adam, 0.01, steps=300, seed=3, shapes=shapes)
        assert same(theirs, ours)


class _AddEpsBeforeBiasCorrection(Adam):
    def _update(self, step):
        beta1, beta2 = self.beta1, self.beta2
        self.exp_avg.lerp_(self.flat_grads, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(self.flat_grads, self.flat_grads, value=1 - beta2)
        step_size = self.lr / (1 - beta1**step)
        denominator = (self.exp_avg_sq.sqrt() + self.eps) / (1 - beta2**step) ** 0.5
        self.flat_params.addcdiv_(self.exp_avg, denominator, value=-step_size)


class _SecondMomentByLerp(Adam):
    def _update(self, step):
        beta1, beta2 = self.beta1, self.beta2
        self.exp_avg.lerp_(self.flat_grads, 1 - beta1)
        self.exp_avg_sq.lerp_(self.flat_grads * self.flat_grads, 1 - beta2)
        step_size = self.lr / (1 - beta1**step)
        denominator = (self.exp_avg_sq.sqrt() / (1 - beta2**step) ** 0.5).add_(self.eps)
        self.flat_params.addcdiv_(self.exp_avg, denominator, value=-step_size)


class _StepCountedFromZero(Adam):
    def _update(self, step):
        super()._update(step - 1.0 if step > 1 else step)


class _StepSizeInFloat32(Adam):
    def _update(self, step):
        beta1, beta2 = self.beta1, self.beta2
        self.exp_avg.lerp_(self.flat_grads, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(self.flat_grads, self.flat_grads, value=1 - beta2)
        step_size = torch.tensor(self.lr, dtype=torch.float32) / torch.tensor(
            1 - beta1**step, dtype=torch.float32
        )
        denominator = (self.exp_avg_sq.sqrt() / (1 - beta2**step) ** 0.5).add_(self.eps)
        self.flat_params.add_(-step_size * self.exp_avg / denominator)


@pytest.mark.parametrize(
    "wrong",
    [_AddEpsBeforeBiasCorrection, _SecondMomentByLerp, _StepCountedFromZero, _StepSizeInFloat32],
)
def test_the_comparison_catches_a_wrong_update(wrong):
    theirs, ours, _, _ = run_both(wrong, 0.01, steps=50, seed=0)
    assert not same(theirs, ours)


def test_adam_refuses_what_torch_would_treat_otherwise():
    first, second = torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(2))
    optimiser = Adam([first, second], lr=0.01)
    first.grad = torch.ones(3)
    with pytest.raises(ValueError, match="every parameter needs a gradient"):
        optimiser.step()
    with pytest.raises(ValueError, match="one dtype"):
        Adam([first, torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))], lr=0.01)
    with pytest.raises(ValueError, match="floating-point"):
        Adam([torch.zeros(2, dtype=torch.int64)], lr=0.01)
    optimiser.zero_grad()
    assert first.grad is None and second.grad is None


@pytest.mark.parametrize("initially", [False, True])
def test_reproducible_torch_sets_and_restores_the_settings(initially):
    threads = torch.get_num_threads()
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(initially)
    try:
        with reproducible_torch(7):
            assert torch.get_num_threads() == 1
            assert torch.are_deterministic_algorithms_enabled()
            first = torch.rand(5)
        assert torch.get_num_threads() == threads
        assert torch.are_deterministic_algorithms_enabled() == initially
        with pytest.raises(RuntimeError, match="inside"):
            with reproducible_torch(7):
                assert torch.equal(torch.rand(5), first)  # the seed's stream again
                raise RuntimeError("inside")
        assert torch.get_num_threads() == threads
        assert torch.are_deterministic_algorithms_enabled() == initially
    finally:
        torch.use_deterministic_algorithms(before)


def _with_torch_adam(monkeypatch, module):
    """`module`'s fit run with torch.optim.Adam, the code path it had before."""
    monkeypatch.setattr(module, "Adam", torch.optim.Adam)


@pytest.mark.parametrize(
    ("n", "d", "k", "layers", "width", "epochs"),
    [(1, 1, 1, 1, 4, 30), (7, 3, 2, 3, 16, 100), (300, 9, 1, 3, 16, 100), (120, 4, 2, 1, 16, 60)],
)
def test_laser_fit_equals_the_fit_with_torch_adam(monkeypatch, n, d, k, layers, width, epochs):
    rng = np.random.default_rng(n)
    x = rng.normal(size=(n, d))
    x[:, 0] = 2.5  # a constant column
    y = np.abs(rng.normal(size=(n, k))) + 1.0
    y[: n // 2] = y[0]  # ties
    ours = _laser_model.fit_regressor(x, y, layers, width, epochs, 0.01, seed=11)
    with monkeypatch.context() as patched:
        _with_torch_adam(patched, _laser_model)
        # the network called as a module, as before (the fit calls its layers' functions)
        patched.setattr(
            _laser_model,
            "_forward_calls",
            lambda network: [(lambda inputs: network(inputs), ())],
        )
        theirs = _laser_model.fit_regressor(x, y, layers, width, epochs, 0.01, seed=11)
    assert same(list(theirs.network.parameters()), list(ours.network.parameters()))
    np.testing.assert_array_equal(
        _laser_model.predict_regressor(ours, x), _laser_model.predict_regressor(theirs, x)
    )


def test_start_training_equals_the_training_with_torch_adam(monkeypatch):
    rng = np.random.default_rng(4)
    sequences = [rng.normal(size=(length, 6)) for length in (5, 1, 9, 3)]
    sequences[1][:, 2] = 1.0
    targets = [rng.normal(size=(len(s), 2)) for s in sequences]
    params = {"hidden": 8, "learning_rate": 0.003, "epochs": 40, "encoder_activation": "softplus"}
    ours = start.train_network(sequences, targets, params, seed=5)
    with monkeypatch.context() as patched:
        _with_torch_adam(patched, start)
        theirs = start.train_network(sequences, targets, params, seed=5)
    assert same(list(theirs[0].parameters()), list(ours[0].parameters()))
    assert theirs[3] == ours[3]  # the final loss


def test_the_fits_load_no_compiler():
    """torch.optim.Adam and torch.use_deterministic_algorithms import TorchDynamo and
    Inductor (about a CPU-second per job); the fits of LASER and START need neither."""
    script = (
        "import sys, numpy as np\n"
        "from stragglers.methods._laser_model import fit_regressor\n"
        "from stragglers.methods.start import train_network\n"
        "fit_regressor(np.ones((3, 2)), np.ones(3), 1, 4, 3, 0.01, seed=1)\n"
        "train_network([np.ones((2, 3))], [np.ones((2, 2))],\n"
        "              {'hidden': 4, 'learning_rate': 0.003, 'epochs': 2}, seed=1)\n"
        "assert 'torch' in sys.modules\n"
        "assert 'torch._dynamo' not in sys.modules, 'the fit imported torch._dynamo'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
