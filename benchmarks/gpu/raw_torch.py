"""The raw PyTorch loop: the plan's graph in torch.nn.functional ops, AMP bf16, channels_last.

Tensors are NCHW in channels_last memory (NHWC in memory, what cuDNN's fastest bf16/TF32
convolutions want); Keras' HWIO kernels become OIHW in channels_last, dense kernels are
transposed, Flatten flattens in Keras' NHWC order so the first dense layer's weights line up.
bf16 is ``torch.autocast(dtype=torch.bfloat16)`` over the forward pass, fp32 master weights,
``torch.optim.SGD(foreach=True)``, ``zero_grad(set_to_none=True)``, ``cudnn.benchmark``: the
usual fast eager loop (torchvision's reference training recipe without torch.compile).
"""

from __future__ import annotations

import functools
from typing import Any

from benchmarks.gpu.graph import Plan, same_pads
from benchmarks.gpu.interp import run_plan, split_weights

DESCRIPTION = (
    "plain PyTorch eager loop (torch.nn.functional ops, autocast bf16, channels_last, "
    "cudnn.benchmark, SGD foreach) on the Keras model's weights"
)


class TorchOps:
    def _pads(
        self, x: Any, cfg: dict[str, Any], in_hw: tuple[int, int], value: float = 0.0
    ) -> tuple[Any, tuple[int, int] | None]:
        """(input, symmetric padding) for a 'same' window op; pads asymmetric cases first."""
        import torch.nn.functional as F

        if cfg["padding"] == "valid":
            return x, (0, 0)
        kh, kw = cfg.get("kernel_size") or cfg["pool_size"]
        sh, sw = cfg["strides"]
        (t, b), (left, r) = same_pads(in_hw[0], kh, sh), same_pads(in_hw[1], kw, sw)
        if t == b and left == r:
            return x, (t, left)
        return F.pad(x, (left, r, t, b), value=value), None

    def conv(self, x: Any, w: dict[str, Any], cfg: dict[str, Any], in_hw: tuple[int, int]) -> Any:
        import torch.nn.functional as F

        x, pad = self._pads(x, cfg, in_hw)
        return F.conv2d(x, w["kernel"], w.get("bias"), cfg["strides"], pad or (0, 0))

    def dense(self, x: Any, w: dict[str, Any], cfg: dict[str, Any]) -> Any:
        import torch.nn.functional as F

        return F.linear(x, w["kernel"], w.get("bias"))

    def batch_norm(
        self, x: Any, w: dict[str, Any], s: dict[str, Any], cfg: dict[str, Any], training: bool
    ) -> tuple[Any, None]:
        import torch
        import torch.nn.functional as F

        gamma, beta = w.get("gamma"), w.get("beta")
        if gamma is None and beta is not None:
            # scale=False (InceptionV3's batch norms): with no weight, the batch-norm backward on
            # an H200 (torch 2.11, cuDNN) gave the bias an empty gradient ("invalid gradient at
            # index 2 - got [0] but expected shape compatible with [192]"); a fixed weight of
            # ones, made once per layer, computes the same and trains.
            ones: dict[int, Any] = self.__dict__.setdefault("_ones", {})
            gamma = ones.get(id(beta))
            if gamma is None:
                gamma = ones[id(beta)] = torch.ones_like(beta, requires_grad=False)
        y = F.batch_norm(
            x,
            s["moving_mean"],
            s["moving_variance"],
            gamma,
            beta,
            training,
            1.0 - cfg["momentum"],
            cfg["epsilon"],
        )
        return y, None

    def act(self, x: Any, name: str) -> Any:
        import torch.nn.functional as F

        return F.relu(x) if name == "relu" else x

    def max_pool(self, x: Any, cfg: dict[str, Any], in_hw: tuple[int, int]) -> Any:
        import torch.nn.functional as F

        x, pad = self._pads(x, cfg, in_hw, value=float("-inf"))
        return F.max_pool2d(x, cfg["pool_size"], cfg["strides"], pad or (0, 0))

    def avg_pool(self, x: Any, cfg: dict[str, Any], in_hw: tuple[int, int]) -> Any:
        import torch.nn.functional as F

        x2, pad = self._pads(x, cfg, in_hw)
        if pad is None:
            raise ValueError("asymmetric 'same' average pooling is not supported")
        return F.avg_pool2d(x2, cfg["pool_size"], cfg["strides"], pad, count_include_pad=False)

    def global_avg_pool(self, x: Any) -> Any:
        return x.mean((2, 3))

    def flatten(self, x: Any) -> Any:
        return x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)

    def dropout(self, x: Any, rate: float, index: int) -> Any:
        import torch.nn.functional as F

        return F.dropout(x, rate, True)

    def add(self, xs: list[Any]) -> Any:
        import torch

        return functools.reduce(torch.add, xs)

    def concat(self, xs: list[Any]) -> Any:
        import torch

        return torch.cat(xs, 1)

    def zero_pad(self, x: Any, pads: tuple[int, int, int, int]) -> Any:
        import torch.nn.functional as F

        top, bottom, left, right = pads
        return F.pad(x, (left, right, top, bottom))


class TorchRaw:
    framework = "torch"
    description = DESCRIPTION

    def __init__(
        self, plan: Plan, batch: int, precision: str, lr: float = 0.005, seed: int = 1234
    ) -> None:
        import torch

        self.torch = torch
        self.plan = plan
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        torch.backends.cudnn.benchmark = True  # fixed shapes: let cuDNN pick its fastest kernels
        self.bf16 = precision == "bf16"
        cl = torch.channels_last
        p, s = split_weights(plan)
        self.params: dict[str, dict[str, Any]] = {}
        kinds = {op.name: op.kind for op in plan.ops}
        for name, d in p.items():
            out = {}
            for k, v in d.items():
                t = torch.from_numpy(v).to(self.device)
                if k == "kernel" and kinds[name] == "Conv2D":
                    t = t.permute(3, 2, 0, 1).contiguous(memory_format=cl)  # HWIO -> OIHW
                elif k == "kernel":
                    t = t.t().contiguous()  # (in, out) -> (out, in)
                out[k] = t.requires_grad_(True)
            self.params[name] = out
        self.state = {
            n: {k: torch.from_numpy(v).to(self.device) for k, v in d.items()} for n, d in s.items()
        }
        self.variables = [v for d in self.params.values() for v in d.values()]
        self.opt = torch.optim.SGD(self.variables, lr=lr, foreach=self.device == "cuda")
        self.ops = TorchOps()
        gen = torch.Generator(device=self.device).manual_seed(seed)
        h, w, c = plan.input_shape
        images = torch.randn((batch, c, h, w), generator=gen, device=self.device)
        self.images = (images.clamp_(-2, 2) * 60.0 + 127.0).contiguous(memory_format=cl)
        self.labels = torch.randint(
            0, plan.num_classes, (batch,), generator=gen, device=self.device
        )
        self._loss: Any = None

    def forward(self, x: Any, training: bool) -> Any:
        """Logits for NHWC ``x`` (numpy array or tensor), as float32."""
        torch = self.torch
        if not torch.is_tensor(x):
            x = torch.from_numpy(x).to(self.device)
        x = x.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
        with torch.autocast(self.device, dtype=torch.bfloat16, enabled=self.bf16):
            logits, _ = run_plan(self.plan, x, self.ops, self.params, self.state, training)
        return logits.float()

    def _forward_nchw(self) -> Any:
        torch = self.torch
        with torch.autocast(self.device, dtype=torch.bfloat16, enabled=self.bf16):
            logits, _ = run_plan(self.plan, self.images, self.ops, self.params, self.state, True)
        return logits.float()

    def step(self) -> None:
        import torch.nn.functional as F

        loss = F.cross_entropy(self._forward_nchw(), self.labels)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self._loss = loss.detach()

    def sync(self) -> float:
        if self.device == "cuda":
            self.torch.cuda.synchronize()
        return float(self._loss)
