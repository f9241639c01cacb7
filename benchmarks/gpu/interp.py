"""Walk a :class:`benchmarks.gpu.graph.Plan` with one framework's native ops.

Each raw loop (raw_torch, raw_jax, raw_tf) supplies an ``Ops`` object with the methods below;
``run_plan`` feeds the graph through them. Batch norm returns its new moving statistics (or
None when the framework updates them in place), collected so functional frameworks (JAX) can
carry them as state.
"""

from __future__ import annotations

from typing import Any, Protocol

from benchmarks.gpu.graph import Plan


class Ops(Protocol):
    def conv(
        self, x: Any, w: dict[str, Any], cfg: dict[str, Any], in_hw: tuple[int, int]
    ) -> Any: ...
    def dense(self, x: Any, w: dict[str, Any], cfg: dict[str, Any]) -> Any: ...
    def batch_norm(
        self, x: Any, w: dict[str, Any], s: dict[str, Any], cfg: dict[str, Any], training: bool
    ) -> tuple[Any, dict[str, Any] | None]: ...
    def act(self, x: Any, name: str) -> Any: ...
    def max_pool(self, x: Any, cfg: dict[str, Any], in_hw: tuple[int, int]) -> Any: ...
    def avg_pool(self, x: Any, cfg: dict[str, Any], in_hw: tuple[int, int]) -> Any: ...
    def global_avg_pool(self, x: Any) -> Any: ...
    def flatten(self, x: Any) -> Any: ...
    def dropout(self, x: Any, rate: float, index: int) -> Any: ...
    def add(self, xs: list[Any]) -> Any: ...
    def concat(self, xs: list[Any]) -> Any: ...
    def zero_pad(self, x: Any, pads: tuple[int, int, int, int]) -> Any: ...


def run_plan(
    plan: Plan,
    x: Any,
    ops: Ops,
    params: dict[str, dict[str, Any]],
    state: dict[str, dict[str, Any]],
    training: bool,
) -> tuple[Any, dict[str, dict[str, Any]]]:
    """(logits, new batch-norm state by layer name) of the plan on input ``x``."""
    vals: dict[int, Any] = {plan.input_id: x}
    hw: dict[int, tuple[int, int]] = {plan.input_id: plan.input_shape[:2]}
    new_state: dict[str, dict[str, Any]] = {}
    dropouts = 0
    for op in plan.ops:
        ins = [vals[i] for i in op.inputs]
        in_hw = hw.get(op.inputs[0], (0, 0))
        k, c = op.kind, op.cfg
        if k == "Conv2D":
            y = ops.act(ops.conv(ins[0], params[op.name], c, in_hw), c["activation"])
        elif k == "Dense":
            y = ops.act(ops.dense(ins[0], params[op.name], c), c["activation"])
        elif k == "BatchNormalization":
            y, upd = ops.batch_norm(ins[0], params.get(op.name, {}), state[op.name], c, training)
            if upd is not None:
                new_state[op.name] = upd
        elif k in ("Activation", "ReLU"):
            y = ops.act(ins[0], c["activation"])
        elif k == "MaxPooling2D":
            y = ops.max_pool(ins[0], c, in_hw)
        elif k == "AveragePooling2D":
            y = ops.avg_pool(ins[0], c, in_hw)
        elif k == "GlobalAveragePooling2D":
            y = ops.global_avg_pool(ins[0])
        elif k == "Flatten":
            y = ops.flatten(ins[0])
        elif k == "Dropout":
            y = ops.dropout(ins[0], c["rate"], dropouts) if training else ins[0]
            dropouts += 1
        elif k == "Add":
            y = ops.add(ins)
        elif k == "Concatenate":
            y = ops.concat(ins)
        elif k == "ZeroPadding2D":
            y = ops.zero_pad(ins[0], c["padding"])
        else:  # graph.from_keras rejects anything else
            raise ValueError(f"op {op.name!r} of kind {k} is not supported")
        vals[op.output] = y
        if len(op.out_shape) == 3:
            hw[op.output] = (op.out_shape[0], op.out_shape[1])
    return vals[plan.output_id], new_state


def split_weights(plan: Plan) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(trainable params, batch-norm moving statistics) as numpy arrays by layer name."""
    params: dict[str, dict[str, Any]] = {}
    state: dict[str, dict[str, Any]] = {}
    for op in plan.ops:
        train = {k: v for k, v in op.weights.items() if not k.startswith("moving_")}
        moving = {k: v for k, v in op.weights.items() if k.startswith("moving_")}
        if train:
            params[op.name] = train
        if moving:
            state[op.name] = moving
    return params, state
