"""DeepBench-style communication kernels: all-reduce across local devices, host-device bandwidth.

- ``allreduce``: sum of a float32 buffer across the replicas of a MirroredStrategy over local
  devices (NCCL on GPUs; on a CPU-only host, logical CPU devices, which only tests the code
  path). Reports algorithm bandwidth (bytes / time) and bus bandwidth (x 2(n-1)/n, as
  nccl-tests), both GB/s. With fewer local devices than asked it re-runs itself in a child
  process that configures logical devices before TensorFlow starts.
- ``bandwidth``: host-to-device and device-to-host copies from pinned host memory (PyTorch's
  ``pin_memory`` when PyTorch with CUDA is present; TensorFlow copies otherwise; a plain host
  memcpy on a machine without a GPU), under a CPU affinity of ``none``, ``local`` (the CPUs of
  the GPU's NUMA node) or ``remote`` (another node's CPUs): the IBM containers finding. Each
  affinity mode runs in a fresh process (:func:`bandwidth_isolated`: no caching allocator or
  CUDA context carried over from another mode), under ``numactl --cpunodebind=N --membind=N``
  when numactl is installed (else pinned with sched_setaffinity, and the record says numactl
  is missing: Debian package ``numactl``). Buffers are allocated after the binding, and the
  record carries the NUMA node the host buffer's first page is really on (``move_pages``).
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from workloads.kernels.compute import KernelResult, time_calls
from workloads.paths import python_path


def allreduce(elements: int, devices: int = 2, warmup: int = 2, iters: int = 10) -> KernelResult:
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    pool = gpus or tf.config.list_logical_devices("CPU")
    if len(pool) < devices and gpus:
        raise ValueError(
            f"all-reduce over {devices} devices needs {devices} GPUs; this host shows {len(gpus)}"
        )
    if len(pool) < devices:
        if _configure_logical_cpus(devices):
            pool = tf.config.list_logical_devices("CPU")
        elif os.environ.get("GPULAB_ALLREDUCE_CHILD"):
            raise RuntimeError(f"could not make {devices} logical CPU devices")
        else:
            return _allreduce_in_child(elements, devices, warmup, iters)
    names = [d.name for d in pool[:devices]]
    cross = None if gpus else tf.distribute.ReductionToOneDevice(reduce_to_device=names[0])
    strategy = tf.distribute.MirroredStrategy(names, cross_device_ops=cross)
    with strategy.scope():
        buf = tf.Variable(tf.ones((elements,)), aggregation=tf.VariableAggregation.NONE)

    @tf.function  # type: ignore[untyped-decorator]  # tf.function is missing from the stubs
    def step() -> Any:
        def fn() -> Any:
            ctx = tf.distribute.get_replica_context()
            return ctx.all_reduce(tf.distribute.ReduceOp.SUM, buf.read_value())

        return strategy.experimental_local_results(strategy.run(fn))

    t = time_calls(step, warmup, iters)
    check = float(step()[0][0])
    nbytes = 4 * elements
    algbw = nbytes / t / 1e9
    return KernelResult(
        "allreduce",
        {"elements": elements, "bytes": nbytes, "devices": devices},
        t,
        iters,
        names[0],
        gbps=algbw,
        extra={"busbw_gbps": algbw * 2 * (devices - 1) / devices, "sum_check": check},
    )


def _configure_logical_cpus(n: int) -> bool:
    import tensorflow as tf

    try:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(n)]
        )
    except RuntimeError:  # TensorFlow already initialised its devices
        return False
    return True


def _allreduce_in_child(elements: int, devices: int, warmup: int, iters: int) -> KernelResult:
    cmd = [
        sys.executable,
        "-m",
        "workloads.kernels.comm",
        "allreduce",
        str(elements),
        str(devices),
        str(warmup),
        str(iters),
    ]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", GPULAB_ALLREDUCE_CHILD="1")
    env["PYTHONPATH"] = python_path(env)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, check=False)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"all-reduce child failed (rc {proc.returncode}): {tail[0]}")
    return KernelResult(**json.loads(proc.stdout.strip().splitlines()[-1]))


# ---- host-device bandwidth -------------------------------------------------------------


def node_cpus(node: int) -> set[int]:
    """CPUs of NUMA node ``node`` (sysfs cpulist); all CPUs when sysfs has no nodes."""
    path = Path(f"/sys/devices/system/node/node{node}/cpulist")
    if not path.exists():
        return set(range(os.cpu_count() or 1))
    cpus: set[int] = set()
    for part in path.read_text().strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def numa_nodes() -> list[int]:
    base = Path("/sys/devices/system/node")
    nodes = sorted(int(p.name[4:]) for p in base.glob("node[0-9]*")) if base.exists() else []
    return nodes or [0]


def gpu_numa_node(index: int = 0) -> int | None:
    """NUMA node of GPU ``index`` from NVML's PCI bus id and sysfs; None without a GPU."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            bus = pynvml.nvmlDeviceGetPciInfo(pynvml.nvmlDeviceGetHandleByIndex(index)).busId
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return None
    bus = bus.decode() if isinstance(bus, bytes) else str(bus)
    bus = bus.lower()[-12:]  # NVML gives 8-digit domains; sysfs 4
    try:
        node = int(Path(f"/sys/bus/pci/devices/{bus}/numa_node").read_text().strip())
    except (OSError, ValueError):
        return None
    return max(node, 0)


def affinity_cpus(mode: str, gpu_node: int | None) -> set[int] | None:
    """CPUs to pin to for ``mode`` ('none', 'local', 'remote'); None: leave affinity alone."""
    if mode == "none":
        return None
    home = 0 if gpu_node is None else gpu_node
    if mode == "local":
        return node_cpus(home)
    if mode == "remote":
        others = [n for n in numa_nodes() if n != home]
        return node_cpus(others[0]) if others else None
    raise ValueError(f"affinity {mode!r} is not one of none, local, remote")


def _copier(nbytes: int, direction: str) -> tuple[Any, str, str, int | None]:
    """(callable doing one copy, backend name, device, address of the host buffer or None)."""
    try:
        import torch

        if torch.cuda.is_available():
            host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
            host.fill_(1)
            dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")

            def copy_torch() -> Any:
                if direction == "h2d":
                    dev.copy_(host, non_blocking=True)
                else:
                    host.copy_(dev, non_blocking=True)
                torch.cuda.synchronize()
                return None

            return copy_torch, "torch-pinned", "cuda:0", int(host.data_ptr())
    except ImportError:
        pass
    import numpy as np

    has_gpu = False
    if any(Path("/dev").glob("nvidia[0-9]*")):  # no NVIDIA device: no TensorFlow import
        try:
            import tensorflow as tf

            has_gpu = bool(tf.config.list_logical_devices("GPU"))
        except ImportError:
            pass
    if has_gpu:
        with tf.device("/CPU:0"):
            host_t = tf.ones((nbytes,), tf.uint8)
        with tf.device("/GPU:0"):
            dev_t = tf.ones((nbytes,), tf.uint8)

        def copy_tf() -> Any:
            src, where = (host_t, "/GPU:0") if direction == "h2d" else (dev_t, "/CPU:0")
            with tf.device(where):
                out = tf.identity(src)
            out[:1].numpy()
            return None

        return copy_tf, "tensorflow", "/GPU:0", None
    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.empty_like(src)

    def copy_host() -> Any:
        np.copyto(dst, src)
        return None

    return copy_host, "host-memcpy", "cpu", int(src.ctypes.data)


def bandwidth(
    nbytes: int, direction: str = "h2d", affinity: str = "none", warmup: int = 2, iters: int = 10
) -> KernelResult:
    if direction not in ("h2d", "d2h"):
        raise ValueError(f"direction {direction!r} is not h2d or d2h")
    gpu_node = gpu_numa_node()
    cpus = affinity_cpus(affinity, gpu_node)
    before = os.sched_getaffinity(0)
    if cpus is None and affinity != "none":
        raise ValueError(f"affinity {affinity!r} needs a second NUMA node; this host has one")
    try:
        if cpus is not None:
            os.sched_setaffinity(0, cpus)
        fn, backend, device, address = _copier(nbytes, direction)
        for _ in range(max(1, warmup)):
            fn()
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        t = (time.perf_counter() - start) / iters
    finally:
        os.sched_setaffinity(0, before)
    shape = {
        "bytes": nbytes,
        "direction": direction,
        "affinity": affinity,
        "backend": backend,
        "gpu_numa_node": gpu_node,
        "cpus": sorted(cpus) if cpus else None,
        "buffer_numa_node": page_node(address) if address is not None else None,
    }
    return KernelResult("bandwidth", shape, t, iters, device, gbps=nbytes / t / 1e9)


_MOVE_PAGES = {"x86_64": 279, "aarch64": 239, "ppc64le": 301}


def page_node(address: int) -> int | None:
    """NUMA node of the page holding ``address`` (move_pages with no target: query only);
    None where the call is unavailable or refused."""
    number = _MOVE_PAGES.get(platform.machine())
    if number is None:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    page = ctypes.c_void_p(address - address % os.sysconf("SC_PAGE_SIZE"))
    pages = (ctypes.c_void_p * 1)(page)
    status = (ctypes.c_int * 1)(-1)
    rc = libc.syscall(number, 0, 1, pages, None, status, 0)
    return int(status[0]) if rc == 0 and status[0] >= 0 else None


def numactl_argv(affinity: str, gpu_node: int | None, mode: str = "auto") -> tuple[list[str], str]:
    """The ``numactl`` prefix for an affinity mode, and what the record says about it."""
    if mode == "off":
        return [], "off (option numactl: off)"
    if affinity == "none":
        return [], "not used (affinity none)"
    tool = shutil.which("numactl")
    if tool is None:
        return [], (
            "skipped: numactl is not installed (Debian/Ubuntu package numactl); pinned with "
            "sched_setaffinity only, memory placed by first touch"
        )
    home = 0 if gpu_node is None else gpu_node
    others = [n for n in numa_nodes() if n != home]
    node = home if affinity == "local" else (others[0] if others else None)
    if node is None:
        return [], "not used (no second NUMA node)"
    return [tool, f"--cpunodebind={node}", f"--membind={node}"], f"numactl node {node}"


def bandwidth_isolated(
    nbytes: int,
    direction: str,
    affinity: str,
    warmup: int,
    iters: int,
    numactl: str = "auto",
    timeout_s: float = 600.0,
) -> KernelResult:
    """:func:`bandwidth` in a fresh process, under numactl when there is one (module doc)."""
    prefix, how = numactl_argv(affinity, gpu_numa_node(), numactl)
    args = ["bandwidth", str(nbytes), direction, affinity, str(warmup), str(iters)]
    cmd = [*prefix, sys.executable, "-m", "workloads.kernels.comm", *args]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env["PYTHONPATH"] = python_path(env)
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout_s, env=env, check=False
    )
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"bandwidth child failed (rc {proc.returncode}): {tail[0]}")
    res = KernelResult(**json.loads(proc.stdout.strip().splitlines()[-1]))
    res.shape.update(numactl=how, process="fresh")
    return res


def _main(argv: list[str]) -> int:
    if argv[:1] == ["bandwidth"]:
        size, direction, affinity, first, count = argv[1:6]
        # under numactl the binding is done already; sched_setaffinity narrows nothing more
        out = bandwidth(int(size), direction, affinity, int(first), int(count))
        print(json.dumps(out.as_dict()))
        return 0
    if argv[:1] == ["allreduce"]:
        elements, devices, warmup, iters = (int(a) for a in argv[1:5])
        _configure_logical_cpus(devices)
        res = allreduce(elements, devices, warmup, iters)
        if res.shape.get("devices") != devices:
            return 1
        print(json.dumps(res.as_dict()))
        return 0
    print(
        "usage: python -m workloads.kernels.comm allreduce ELEMENTS DEVICES WARMUP ITERS\n"
        "       python -m workloads.kernels.comm bandwidth BYTES h2d|d2h AFFINITY WARMUP ITERS",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
