"""What LASER's and START's network fits share: torch's settings for a reproducible fit and
torch's Adam update, without the per-call bookkeeping that cost more than the arithmetic.

torch is imported inside the functions, so importing this module costs nothing for the methods
that never train a network.

- `reproducible_torch(seed)`: one thread, deterministic algorithms, the seed; the process's
  thread count and deterministic flag restored afterwards. It sets the flag in ATen itself
  (`torch._C._set_deterministic_algorithms`, what `torch.use_deterministic_algorithms` calls):
  the public function's first call also imports torch's compiler (TorchDynamo and Inductor,
  about a CPU-second) to set Inductor's own copy of the flag, which eager training never reads.
- `Adam`: `torch.optim.Adam(params, lr)` with its defaults on CPU, where torch runs its
  single-tensor update (`torch.optim.adam._single_tensor_adam`): the same tensor operations
  in the same order with the same scalars. Every operation is elementwise, so it runs once
  over all parameters laid end to end in one buffer (gradients copied in, new values copied
  back) instead of once per parameter: 7 operations a step instead of 7 per parameter,
  without the optimizer's hooks, profiler records, state dictionaries and step counter kept
  as a tensor read back with `.item()`. The test compares the parameters with torch's, bit
  for bit, over many steps on parameters of many sizes (an element's result does not depend
  on where it lies in the buffer). Building a `torch.optim.Adam` imports torch's compiler
  too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def reproducible_torch(seed: int) -> Iterator[None]:
    """One thread, deterministic algorithms and `torch.manual_seed(seed)` inside the block."""
    import torch

    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    try:
        torch.set_num_threads(1)
        torch._C._set_deterministic_algorithms(True, warn_only=False)
        torch.manual_seed(seed)
        yield
    finally:
        torch.set_num_threads(threads)
        torch._C._set_deterministic_algorithms(deterministic, warn_only=False)


class Adam:
    """`torch.optim.Adam(params, lr=lr)` (betas 0.9 and 0.999, eps 1e-8, no weight decay, no
    AMSGrad) for real CPU tensors that all have a gradient at every step."""

    def __init__(self, params, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
        import torch

        self.params = list(params)
        if any(p.device.type != "cpu" or not p.is_floating_point() for p in self.params):
            raise ValueError("Adam: real floating-point parameters on the CPU only")
        if len({p.dtype for p in self.params}) > 1:
            raise ValueError("Adam: parameters of one dtype only (they share one buffer)")
        self.lr = float(lr)
        self.beta1, self.beta2 = float(betas[0]), float(betas[1])
        self.eps = float(eps)
        with torch.no_grad():
            # every parameter's values, one after the other: the update runs once over all
            self.flat_params = torch.cat([p.detach().reshape(-1) for p in self.params])
        sizes = [p.numel() for p in self.params]
        self._param_views = [
            view.view(p.shape) for view, p in zip(self.flat_params.split(sizes), self.params)
        ]
        self.flat_grads = torch.empty_like(self.flat_params)
        self._grad_views = [
            view.view(p.shape) for view, p in zip(self.flat_grads.split(sizes), self.params)
        ]
        # torch.optim.Adam's state at its first step: zeros
        self.exp_avg = torch.zeros_like(self.flat_params)
        self.exp_avg_sq = torch.zeros_like(self.flat_params)
        self.steps = 0

    def zero_grad(self) -> None:
        """As `torch.optim.Optimizer.zero_grad()` (set_to_none): gradients dropped."""
        for param in self.params:
            param.grad = None

    def step(self) -> None:
        """One update of every parameter from its gradient."""
        import torch

        grads = [param.grad for param in self.params]
        if any(grad is None for grad in grads):
            # torch would skip such a parameter and count steps per parameter
            raise ValueError("Adam: every parameter needs a gradient at every step")
        self.steps += 1
        with torch.no_grad():
            torch._foreach_copy_(self._grad_views, grads)
            self._update(float(self.steps))
            torch._foreach_copy_(self.params, self._param_views)

    def _update(self, step: float) -> None:
        """_single_tensor_adam's operations for one parameter (capturable=False), on all of
        them at once. `step` is torch's step counter: a float32 tensor read back as a Python
        float, exact for counts below 2**24."""
        beta1, beta2 = self.beta1, self.beta2
        self.exp_avg.lerp_(self.flat_grads, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(self.flat_grads, self.flat_grads, value=1 - beta2)
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        step_size = self.lr / bias_correction1
        bias_correction2_sqrt = bias_correction2**0.5
        denominator = (self.exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(self.eps)
        self.flat_params.addcdiv_(self.exp_avg, denominator, value=-step_size)
