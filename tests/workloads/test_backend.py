"""Backend choice: TensorFlow by default; JAX or PyTorch only when named or asked to fall back."""

from __future__ import annotations

import importlib.util

import pytest

from workloads import step
from workloads.errors import InputError


@pytest.fixture
def installed(monkeypatch):
    """Pretend only some frameworks are installed (find_spec double)."""
    real = importlib.util.find_spec

    def use(*names: str) -> None:
        def find_spec(name, *args, **kw):
            if name in step.BACKENDS:
                return object() if name in names else None
            return real(name, *args, **kw)

        monkeypatch.setattr(step.importlib.util, "find_spec", find_spec)

    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.delenv(step.FALLBACK_ENV, raising=False)
    return use


def test_tensorflow_first(installed):
    installed("tensorflow", "jax", "torch")
    assert step.default_backend() == "tensorflow"


def test_no_silent_fallback_where_tensorflow_is_absent(installed):
    installed("jax", "torch")
    with pytest.raises(InputError, match=r"TensorFlow .* is not installed; installed: jax, torch"):
        step.default_backend()


def test_jax_or_torch_where_tensorflow_is_absent_when_asked(installed, monkeypatch):
    monkeypatch.setenv(step.FALLBACK_ENV, "1")
    installed("jax", "torch")
    assert step.default_backend() == "jax"
    installed("torch")
    assert step.default_backend() == "torch"
    installed("tensorflow", "jax")
    assert step.default_backend() == "tensorflow"


def test_keras_backend_variable_names_the_backend_without_tensorflow(installed, monkeypatch):
    installed("jax")
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    assert step.default_backend() == "jax"


def test_keras_backend_variable_wins(installed, monkeypatch):
    installed("tensorflow", "torch")
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    assert step.default_backend() == "torch"


def test_no_backend_or_a_missing_one_is_bad_input(installed):
    installed()
    with pytest.raises(InputError, match="no Keras backend installed"):
        step.default_backend()
    with pytest.raises(InputError, match="backend 'jax' is not installed"):
        step.check_backend("jax")
    with pytest.raises(InputError, match="unknown backend 'mxnet'"):
        step.check_backend("mxnet")


@pytest.mark.tf
def test_central_storage_step_keeps_variables_on_the_cpu_and_averages() -> None:
    """Central storage (variables on the CPU, batch split over the compute devices, averaged
    gradients): here two "devices" are the CPU twice, so one step equals one plain SGD step
    on the whole batch."""
    import numpy as np

    keras = pytest.importorskip("keras")
    tf = pytest.importorskip("tensorflow")
    from workloads.step import build_central_step, build_train_step, make_optimizer

    def model() -> object:
        keras.utils.set_random_seed(3)
        return keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])

    x = np.random.RandomState(0).rand(8, 4).astype("float32")
    y = np.array([0, 1, 2, 0, 1, 2, 0, 1], dtype="int32")
    with tf.device("/CPU:0"):
        central = model()
    build_central_step(central, ["/CPU:0", "/CPU:0"], make_optimizer(0.1))(x, y)
    plain = model()
    build_train_step(plain, make_optimizer(0.1))(x, y)
    assert "CPU" in central.trainable_variables[0].value.device
    for a, b in zip(central.get_weights(), plain.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.tf
def test_l2_weight_decay_as_tf_cnn_skips_batch_norm() -> None:
    """tf_cnn's L2 term: weight_decay x sum(v^2)/2 over the variables outside batch norm."""
    import numpy as np

    keras = pytest.importorskip("keras")
    from workloads.step import TF_CNN_WEIGHT_DECAY, DecayedLoss, decayed_mask, default_loss

    keras.utils.set_random_seed(5)
    m = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3), keras.layers.BatchNormalization()]
    )
    assert decayed_mask(m) == [True, True, False, False]  # kernel, bias | gamma, beta
    x = np.ones((2, 4), "float32")
    y = np.array([0, 1], "int32")
    base = float(default_loss()(y, m(x)))
    decayed = float(DecayedLoss(default_loss(), m, TF_CNN_WEIGHT_DECAY)(y, m(x)))
    kernel, bias = (v.numpy() for v in m.trainable_variables[:2])
    want = TF_CNN_WEIGHT_DECAY * 0.5 * (np.sum(kernel**2) + np.sum(bias**2))
    assert decayed - base == pytest.approx(want, rel=1e-4)
    assert TF_CNN_WEIGHT_DECAY == 4e-5


class _CudaTensor:
    """Stands in for a PyTorch tensor on a GPU (torch is not installed here): its ``numpy()``
    refuses, as torch's does for a CUDA tensor; ``item()`` copies the value to the host."""

    __module__ = "torch"

    def __init__(self, value: float) -> None:
        self.value = value

    def numpy(self) -> float:
        raise TypeError("can't convert cuda:0 device type tensor to numpy")

    def item(self) -> float:
        return self.value


def test_losses_of_a_torch_step_on_a_gpu_are_fetched_with_item() -> None:
    """The runner's fetch after the timed window failed every PyTorch measurement on an H200
    ("can't convert cuda:0 device type tensor to numpy"): a torch loss comes through item()."""
    train = step.TrainStep(lambda images, labels: _CudaTensor(2.5), sync=lambda loss: None)
    assert train.fetch([train(None, None), _CudaTensor(0.25)]) == [2.5, 0.25]


def test_losses_with_numpy_or_plain_numbers_are_fetched_as_floats() -> None:
    class Eager:  # TensorFlow's eager tensor: numpy() brings the value to the host
        def numpy(self) -> float:
            return 1.5

    assert step.TrainStep(lambda i, lab: 0.0).fetch([Eager(), 3]) == [1.5, 3.0]
