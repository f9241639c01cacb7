"""A Keras 3 functional model as a framework-neutral list of ops, with its weights.

The raw framework loops (raw_torch, raw_jax, raw_tf) execute this list with their own native
ops, so the raw arm trains exactly the runner's architecture from the same initial weights
(not a look-alike such as torchvision's ResNet-50 v1.5). Only the layer types of the runner's
models are supported (workloads/models: AlexNet, InceptionV3, ResNet-50 v1, MNIST CNN); any
other raises ValueError naming the layer.

``forward_macs`` counts multiply-accumulates of one image's forward pass (convolutions and
dense layers, the standard count; batch norm, pooling and activations are left out). Training
FLOPs per image = 3 x forward FLOPs = 6 x MACs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SUPPORTED = (
    "InputLayer",
    "Conv2D",
    "Dense",
    "BatchNormalization",
    "Activation",
    "ReLU",
    "MaxPooling2D",
    "AveragePooling2D",
    "GlobalAveragePooling2D",
    "Flatten",
    "Dropout",
    "Add",
    "Concatenate",
    "ZeroPadding2D",
)
ACTIVATIONS = ("relu", "linear")


@dataclass
class Op:
    name: str
    kind: str
    inputs: list[int]
    output: int
    out_shape: tuple[int, ...]  # NHWC without the batch dimension
    cfg: dict[str, Any] = field(default_factory=dict)
    weights: dict[str, Any] = field(default_factory=dict)  # numpy arrays, Keras layouts


@dataclass
class Plan:
    name: str
    input_id: int
    output_id: int
    input_shape: tuple[int, int, int]
    num_classes: int
    ops: list[Op]

    def param_count(self) -> int:
        return int(
            sum(
                w.size
                for op in self.ops
                for k, w in op.weights.items()
                if k not in ("moving_mean", "moving_variance")
            )
        )


def _activation(layer: Any) -> str:
    act = getattr(layer, "activation", None)
    name = getattr(act, "__name__", "linear") if act is not None else "linear"
    if name not in ACTIVATIONS:
        raise ValueError(f"layer {layer.name!r}: activation {name!r} is not supported")
    return name


def _pair(v: Any) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


def _cfg(layer: Any, kind: str) -> dict[str, Any]:
    c = layer.get_config()
    if kind == "Conv2D":
        if tuple(_pair(c["dilation_rate"])) != (1, 1) or c.get("groups", 1) != 1:
            raise ValueError(f"layer {layer.name!r}: dilated or grouped conv not supported")
        return {
            "strides": _pair(c["strides"]),
            "padding": c["padding"],
            "kernel_size": _pair(c["kernel_size"]),
            "filters": int(c["filters"]),
            "use_bias": bool(c["use_bias"]),
            "activation": _activation(layer),
        }
    if kind == "Dense":
        return {
            "units": int(c["units"]),
            "use_bias": bool(c["use_bias"]),
            "activation": _activation(layer),
        }
    if kind == "BatchNormalization":
        axis = c["axis"]
        axis = axis[0] if isinstance(axis, list | tuple) else axis
        if axis not in (-1, 3):
            raise ValueError(f"layer {layer.name!r}: batch norm over axis {axis} not supported")
        return {
            "epsilon": float(c["epsilon"]),
            "momentum": float(c["momentum"]),
            "center": bool(c["center"]),
            "scale": bool(c["scale"]),
        }
    if kind in ("Activation", "ReLU"):
        if kind == "ReLU":
            return {"activation": "relu"}
        return {"activation": _activation(layer)}
    if kind in ("MaxPooling2D", "AveragePooling2D"):
        return {
            "pool_size": _pair(c["pool_size"]),
            "strides": _pair(c["strides"]),
            "padding": c["padding"],
        }
    if kind == "Dropout":
        return {"rate": float(c["rate"])}
    if kind == "Concatenate":
        if c["axis"] not in (-1, 3):
            raise ValueError(f"layer {layer.name!r}: concatenation on axis {c['axis']}")
        return {}
    if kind == "ZeroPadding2D":
        (top, bottom), (left, right) = c["padding"]
        return {"padding": (int(top), int(bottom), int(left), int(right))}
    return {}


def _weights(layer: Any, kind: str) -> dict[str, Any]:
    import keras

    def np_(v: Any) -> Any:
        return keras.ops.convert_to_numpy(v.value if hasattr(v, "value") else v)

    if kind in ("Conv2D", "Dense"):
        out = {"kernel": np_(layer.kernel)}
        if layer.use_bias:
            out["bias"] = np_(layer.bias)
        return out
    if kind == "BatchNormalization":
        out = {"moving_mean": np_(layer.moving_mean), "moving_variance": np_(layer.moving_variance)}
        if layer.scale:
            out["gamma"] = np_(layer.gamma)
        if layer.center:
            out["beta"] = np_(layer.beta)
        return out
    return {}


def from_keras(model: Any) -> Plan:
    """The op list of a Keras functional ``model`` (one input, one output)."""
    if len(model.inputs) != 1 or len(model.outputs) != 1:
        raise ValueError(f"model {model.name!r}: one input and one output are supported")
    ids: dict[int, int] = {}

    def tid(t: Any) -> int:
        return ids.setdefault(id(t), len(ids))

    input_id = tid(model.inputs[0])
    ops: list[Op] = []
    for layer in model._operations:
        kind = type(layer).__name__
        if kind not in SUPPORTED:
            raise ValueError(f"layer {layer.name!r} of type {kind} is not supported")
        if kind == "InputLayer":
            continue
        node = layer._inbound_nodes[0]
        outs = node.output_tensors
        if len(outs) != 1:
            raise ValueError(f"layer {layer.name!r}: one output tensor expected")
        ops.append(
            Op(
                layer.name,
                kind,
                [tid(t) for t in node.input_tensors],
                tid(outs[0]),
                tuple(int(d) for d in outs[0].shape[1:]),
                _cfg(layer, kind),
                _weights(layer, kind),
            )
        )
    shape = tuple(int(d) for d in model.inputs[0].shape[1:])
    classes = int(model.outputs[0].shape[-1])
    return Plan(model.name, input_id, tid(model.outputs[0]), shape, classes, ops)  # type: ignore[arg-type]


def forward_macs(plan: Plan) -> int:
    """Multiply-accumulates of one image's forward pass (conv and dense layers)."""
    total = 0
    for op in plan.ops:
        if op.kind == "Conv2D":
            kh, kw, cin, cout = op.weights["kernel"].shape
            oh, ow = op.out_shape[0], op.out_shape[1]
            total += oh * ow * kh * kw * cin * cout
        elif op.kind == "Dense":
            fan_in, units = op.weights["kernel"].shape
            total += fan_in * units
    return int(total)


def same_pads(size: int, k: int, s: int) -> tuple[int, int]:
    """TensorFlow 'same' padding (before, after) of one spatial dimension."""
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2
