"""What the GPU suite runs: full size (an H100/H200) and ``--cpu-smoke`` (2 CPU cores, seconds).

Full size is issue 9's list: ResNet-50 at batch 32, 64 and 256, InceptionV3 at 32, AlexNet at
512, each in fp32 and bf16 mixed precision, runner against the raw loop, W=10, T=100, R=3; the
seed claims at the papers' settings. ``--cpu-smoke`` keeps every part and shrinks every size.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from workloads.errors import InputError

PARTS = ("train", "sharing", "shared", "bandwidth", "rnn", "mnist")
PRECISIONS = {"fp32": None, "bf16": "mixed_bfloat16"}  # precision -> Keras dtype policy


@dataclass(frozen=True)
class Case:
    model: str
    batch: int
    image_size: int | None = None  # None: the model's full size

    @property
    def label(self) -> str:
        px = f"@{self.image_size}px" if self.image_size else ""
        return f"{self.model} b{self.batch}{px}"


@dataclass(frozen=True)
class Plan:
    name: str
    train: tuple[Case, ...]
    precisions: tuple[str, ...] = ("fp32", "bf16")
    warmup: int = 10
    steps: int = 100
    repeats: int = 3
    peak_n: int = 8192
    sharing: Case = Case("resnet50", 64)
    sharing_jobs: int = 4
    sharing_steps: int = 100
    shared_foreground: tuple[Case, ...] = (Case("resnet50", 32), Case("alexnet", 32))
    shared_background: Case = Case("alexnet", 512)
    shared_steps: int = 100
    bandwidth: dict[str, Any] = field(
        default_factory=lambda: {
            "sizes": "deepbench",
            "directions": ["h2d", "d2h"],
            "affinities": ["none", "local", "remote"],
        }
    )
    bandwidth_iters: int = 20
    rnn_shapes: tuple[tuple[int, int, int], ...] = ((512, 16, 25), (1024, 32, 25), (1536, 32, 187))
    rnn_cells: tuple[str, ...] = ("lstm", "gru")
    rnn_iters: int = 10
    mnist: Case = Case("mnist_cnn", 128)
    mnist_steps: int = 469  # one epoch of MNIST's 60,000 training images at batch 128
    timeout_s: float = 900.0  # kill deadline of one child process


FULL = Plan(
    name="full",
    train=(
        Case("resnet50", 32),
        Case("resnet50", 64),
        Case("resnet50", 256),
        Case("inception_v3", 32),
        Case("alexnet", 512),
    ),
)

SMOKE = Plan(
    name="cpu-smoke",
    train=(Case("resnet50", 2, 32),),
    warmup=1,
    steps=3,
    repeats=1,
    peak_n=256,
    sharing=Case("mnist_cnn", 8),
    sharing_jobs=4,
    sharing_steps=3,
    shared_foreground=(Case("mnist_cnn", 8),),
    shared_background=Case("alexnet", 2, 67),
    shared_steps=3,
    bandwidth={"sizes": "tiny", "directions": ["h2d", "d2h"], "affinities": ["none", "local"]},
    bandwidth_iters=3,
    rnn_shapes=((16, 4, 5),),
    rnn_iters=2,
    mnist=Case("mnist_cnn", 16),
    mnist_steps=5,
    timeout_s=300.0,
)


def parse_case(text: str) -> Case:
    """``MODEL:BATCH[:IMAGE_SIZE]`` -> Case (InputError naming the text)."""
    from workloads.models import MODELS

    parts = text.split(":")
    if len(parts) not in (2, 3) or parts[0] not in MODELS:
        raise InputError(
            f"--train entry {text!r} must be MODEL:BATCH[:IMAGE_SIZE] with MODEL one "
            f"of {', '.join(sorted(MODELS))}"
        )
    try:
        nums = [int(p) for p in parts[1:]]
    except ValueError:
        raise InputError(f"--train entry {text!r}: batch and image size must be integers") from None
    if any(n < 1 for n in nums):
        raise InputError(f"--train entry {text!r}: batch and image size must be >= 1")
    size = nums[1] if len(nums) == 2 else None
    if size is not None and size < MODELS[parts[0]].min_image_size:
        raise InputError(
            f"--train entry {text!r}: image size {size} is below "
            f"{MODELS[parts[0]].min_image_size} px for {parts[0]}"
        )
    return Case(parts[0], nums[0], size)


def customize(
    plan: Plan,
    train: list[str] | None = None,
    precisions: list[str] | None = None,
    steps: int | None = None,
    warmup: int | None = None,
    repeats: int | None = None,
) -> Plan:
    changes: dict[str, Any] = {}
    if train:
        changes["train"] = tuple(parse_case(t) for t in train)
    if precisions:
        bad = [p for p in precisions if p not in PRECISIONS]
        if bad:
            raise InputError(f"--precisions {bad[0]!r} is not one of {', '.join(PRECISIONS)}")
        changes["precisions"] = tuple(precisions)
    for key, value, lo in (("steps", steps, 1), ("warmup", warmup, 0), ("repeats", repeats, 1)):
        if value is not None:
            if value < lo:
                raise InputError(f"--{key} must be >= {lo}, got {value}")
            changes[key] = value
    return replace(plan, **changes)
