"""Kernel sizes: DeepBench's training set (baidu-research/DeepBench, code/kernels/*_problems.h,
copied whole in workloads.kernels.deepbench_sets) and tiny sizes that run in seconds on 2 CPU
cores (CI).

A size set is chosen by name: ``deepbench`` (DeepBench's whole training set: 160 GEMM, 94 conv,
53 RNN shapes, 7 all-reduce sizes), ``deepbench-small`` (a few of them, minutes on one GPU),
``tiny`` (CI). Families name the network some conv or GEMM shapes came from, so a suite can
select ``family: resnet``; a family or ``deepbench-small`` is a subset, and :func:`coverage`
labels it so ("subset: 17 of 94 DeepBench training shapes").
"""

from __future__ import annotations

from typing import Any

from workloads.errors import InputError
from workloads.kernels import deepbench_sets

# GEMM (M, N, K, transpose A, transpose B)
GEMM_DEEPBENCH: dict[str, list[tuple[int, int, int, bool, bool]]] = {
    "square": [
        (mk, n, mk, ta, False)
        for ta in (False, True)
        for mk in (1760, 2048, 2560, 4096)
        for n in (16, 32, 64, 128, 7000)
    ],
    "transposed_b": [(mk, 7133, mk, False, True) for mk in (1760, 2048, 2560, 4096)],
    "deepspeech": [
        (m, n, k, False, False)
        for k in (1760, 2048, 2560, 4096)
        for m, n in ((5124, 9124), (35, 8457))
    ],
    "speech_fc": [(7680, n, 2560, False, False) for n in (16, 32, 64, 128)]
    + [(3072, n, 1024, False, False) for n in (16, 32, 64, 128)],
    "language": [
        (512, 8, 500000, False, False),
        (1024, 8, 500000, False, False),
        (512, 16, 500000, False, False),
        (1024, 16, 500000, False, False),
    ],
}
GEMM_TINY = {"tiny": [(64, 16, 64, False, False), (32, 48, 64, True, False)]}

# Conv (W, H, C, N, K, filter_w S, filter_h R, pad_w, pad_h, stride_w, stride_h), as DeepBench.
CONV_DEEPBENCH: dict[str, list[tuple[int, ...]]] = {
    "deepspeech": [
        *((700, 161, 1, n, 32, 20, 5, 0, 0, 2, 2) for n in (4, 8, 16, 32)),
        *((341, 79, 32, n, 32, 10, 5, 0, 0, 2, 2) for n in (4, 8, 16, 32)),
    ],
    "ocr": [
        (480, 48, 1, 16, 16, 3, 3, 1, 1, 1, 1),
        (240, 24, 16, 16, 32, 3, 3, 1, 1, 1, 1),
        (120, 12, 32, 16, 64, 3, 3, 1, 1, 1, 1),
        (60, 6, 64, 16, 128, 3, 3, 1, 1, 1, 1),
    ],
    "face": [
        (108, 108, 3, 8, 64, 3, 3, 1, 1, 2, 2),
        (54, 54, 64, 8, 64, 3, 3, 1, 1, 1, 1),
        (27, 27, 128, 8, 128, 3, 3, 1, 1, 1, 1),
        (14, 14, 128, 8, 256, 3, 3, 1, 1, 1, 1),
        (7, 7, 256, 8, 512, 3, 3, 1, 1, 1, 1),
    ],
    "vgg": [
        (w, w, c, n, k, 3, 3, 1, 1, 1, 1)
        for n in (8, 16)
        for w, c, k in (
            (224, 3, 64),
            (112, 64, 128),
            (56, 128, 256),
            (28, 256, 512),
            (14, 512, 512),
            (7, 512, 512),
        )
    ],
    "resnet": [
        (224, 224, 3, 16, 64, 7, 7, 3, 3, 2, 2),
        *(
            (w, w, c, n, k, r, r, p, p, s, s)
            for n in (8, 16)
            for w, c, k, r, p, s in (
                (56, 64, 64, 3, 1, 1),
                (56, 64, 256, 1, 0, 2),
                (28, 128, 128, 3, 1, 1),
                (28, 128, 512, 1, 0, 2),
                (14, 256, 256, 1, 0, 1),
                (14, 256, 256, 3, 1, 1),
                (14, 256, 1024, 1, 0, 2),
                (7, 512, 512, 1, 0, 1),
                (7, 2048, 512, 1, 3, 2),
            )
        ),
    ],
    "googlenet": [
        (28, 28, 192, 16, 32, 5, 5, 2, 2, 1, 1),
        (28, 28, 192, 16, 64, 1, 1, 0, 0, 1, 1),
        (14, 14, 512, 16, 48, 5, 5, 2, 2, 1, 1),
        (14, 14, 512, 16, 192, 1, 1, 0, 0, 1, 1),
        (7, 7, 832, 16, 256, 1, 1, 0, 0, 1, 1),
        (7, 7, 832, 16, 128, 5, 5, 2, 2, 1, 1),
    ],
}
CONV_TINY = {"tiny": [(16, 12, 3, 2, 8, 3, 3, 1, 1, 1, 1), (20, 10, 4, 2, 4, 5, 3, 0, 0, 2, 2)]}

# RNN (hidden, batch, timesteps, cell)
RNN_DEEPBENCH: dict[str, list[tuple[int, int, int, str]]] = {
    "vanilla": [(h, b, 50, "vanilla") for h in (1760, 2048, 2560) for b in (16, 32, 64, 128)],
    "lstm": [(h, b, 25, "lstm") for h in (512, 1024, 2048, 4096) for b in (16, 32, 64, 128)]
    + [(1536, b, 50, "lstm") for b in (8, 16, 32)]
    + [(256, b, 150, "lstm") for b in (16, 32, 64)],
    "gru": [(h, 32, t, "gru") for h in (2816, 2048, 1536, 2560) for t in (750, 375, 187)]
    + [(h, 32, 1500, "gru") for h in (2048, 1536, 2560)]
    + [(512, 32, 1, "gru"), (1024, 32, 1500, "gru"), (1024, 64, 1500, "gru")],
}
RNN_TINY = {"tiny": [(16, 4, 5, "vanilla"), (16, 4, 5, "lstm"), (16, 4, 5, "gru")]}

# All-reduce sizes in float32 elements
ALLREDUCE_DEEPBENCH = [100000, 3097600, 4194304, 6553600, 16777217, 38360000, 64500000]
ALLREDUCE_TINY = [1000, 100000]

# Host-device copy sizes in bytes (bandwidthTest's default is 32 MiB)
BANDWIDTH_DEEPBENCH = [1 << 20, 32 << 20, 256 << 20]
BANDWIDTH_TINY = [64 << 10, 1 << 20]

_SMALL = {
    "gemm": {
        "square": [
            (1760, 16, 1760, False, False),
            (1760, 7000, 1760, False, False),
            (4096, 128, 4096, False, False),
        ]
    },
    "conv": {
        "resnet": CONV_DEEPBENCH["resnet"][:4],
        "deepspeech": CONV_DEEPBENCH["deepspeech"][:1],
    },
    "rnn": {
        "vanilla": RNN_DEEPBENCH["vanilla"][:1],
        "lstm": RNN_DEEPBENCH["lstm"][:1],
        "gru": [(512, 32, 1, "gru"), (1536, 32, 187, "gru")],
    },
}


def select(kernel: str, sizes: str = "tiny", family: str | None = None) -> list[Any]:
    """The shapes of ``kernel`` ('gemm', 'conv', 'rnn', 'allreduce', 'bandwidth')."""
    tables: dict[str, dict[str, Any]] = {
        "gemm": {"deepbench": GEMM_DEEPBENCH, "tiny": GEMM_TINY},
        "conv": {"deepbench": CONV_DEEPBENCH, "tiny": CONV_TINY},
        "rnn": {"deepbench": RNN_DEEPBENCH, "tiny": RNN_TINY},
        "allreduce": {"deepbench": {"all": ALLREDUCE_DEEPBENCH}, "tiny": {"all": ALLREDUCE_TINY}},
        "bandwidth": {"deepbench": {"all": BANDWIDTH_DEEPBENCH}, "tiny": {"all": BANDWIDTH_TINY}},
    }
    if kernel not in tables:
        raise InputError(f"kernel {kernel!r} is not one of {sorted(tables)}")
    by_size = dict(tables[kernel])
    full = _FULL.get(kernel)
    if full is not None and family is None and sizes == "deepbench":
        return list(full)
    if kernel in _SMALL:
        by_size["deepbench-small"] = _SMALL[kernel]
    else:
        by_size["deepbench-small"] = {"all": by_size["deepbench"]["all"][:3]}
    if sizes not in by_size:
        raise InputError(f"sizes {sizes!r} for kernel {kernel!r} is not one of {sorted(by_size)}")
    fams = by_size[sizes]
    if family is not None:
        if family not in fams:
            raise InputError(
                f"family {family!r} for kernel {kernel!r} sizes {sizes!r} is not one of "
                f"{sorted(fams)}"
            )
        return list(fams[family])
    return [shape for rows in fams.values() for shape in rows]


_FULL: dict[str, list[Any]] = {
    "gemm": deepbench_sets.GEMM_TRAINING,
    "conv": deepbench_sets.CONV_TRAINING,
    "rnn": deepbench_sets.RNN_TRAINING,
    "allreduce": deepbench_sets.ALLREDUCE_SIZES,
}


def coverage(kernel: str, sizes: str, family: str | None = None) -> dict[str, Any]:
    """How the selected shapes relate to DeepBench's training set: ``label`` is ``full``
    (all of it), ``subset`` (with ``count`` of ``of``) or ``not deepbench`` (tiny, bandwidth)."""
    count = len(select(kernel, sizes, family))
    full = _FULL.get(kernel)
    if full is None or sizes == "tiny":
        return {"label": "not deepbench", "count": count, "of": None}
    label = "full" if count == len(full) and family is None else "subset"
    text = f"{label}: {count} of {len(full)} DeepBench training shapes"
    return {"label": label, "count": count, "of": len(full), "text": text}


def deepbench_iterations(kernel: str, row: Any) -> int:
    """DeepBench's timed calls for one shape (gemm 400, conv 300, rnn 100, all-reduce 10,000
    for the four smallest sizes and 1,000 above; bandwidth: bandwidthTest's 100)."""
    if kernel == "allreduce":
        sizes, reps = deepbench_sets.ALLREDUCE_SIZES, deepbench_sets.ALLREDUCE_REPEATS
        return reps[sizes.index(row)] if row in sizes else (10000 if row <= 6553600 else 1000)
    return deepbench_sets.ITERATIONS.get(kernel, 100)
