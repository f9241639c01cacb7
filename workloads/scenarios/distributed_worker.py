"""One task of a distributed training job (started by workloads/scenarios/distributed.py).

``TF_CONFIG`` says which task this process is; ``GPULAB_DIST_SPEC`` (JSON) says what to train:
mode (``ps`` or ``allreduce``), model, batch, image_size, warmup, steps, data, data_dir,
learning_rate, sync_every, result (path the reporting task writes its JSON result to).

The reporting task reads NVML's throttle counters around its timed window (``nvml_window``)
and reports when its first step started (``started_unix``), its warm-up (``warmup_s``), its
blocks and the losses' finiteness.

- mode ``ps`` (ParameterServerStrategy, as the CLOSER 2018 distributed runs): ``ps`` and
  ``worker`` tasks serve until killed; the ``chief`` coordinates: per-worker datasets,
  ``warmup x workers`` steps scheduled and joined, then ``steps x workers`` timed.
- mode ``allreduce`` (MultiWorkerMirroredStrategy): every worker trains in lock-step; each
  writes its result, worker 0's is the job's. Then the workers leave together: each waits at
  the coordination service's barrier ``END_BARRIER`` (at most ``END_BARRIER_MS``) and adds
  how that went to its result (``ended``) before it exits. A process that ends without
  TensorFlow's teardown (workloads.quick_exit) skips the shutdown barrier the teardown would
  hold, and a worker done with its last all-reduce could exit while its peer was still pulling
  that step's buffer from it: the peer then failed with ``Socket closed`` (seen between two
  hosts under load). The barrier is passed only once every worker has finished its steps.
  Worker 0 hosts the coordination service itself: it leaves only once every other worker has
  acknowledged the barrier's answer (a key each sets, ``END_ACK``), or ``END_ACK_MS`` passed;
  leaving earlier took the service down before its answer reached a peer (``UnavailableError:
  Failed to send RPC to coordination service``, seen once between two hosts).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

END_BARRIER = "gpulab-distributed-end"
END_BARRIER_MS = 60_000  # the peers are at most a step behind once this worker is done
END_ACK = "gpulab-distributed-end-ack"  # + "/<worker index>", set by each worker but the leader
END_ACK_MS = 10_000  # the barrier's answer is on its way to them when the leader passes it


def _dataset_fn(spec: dict[str, Any], model_spec: Any, size: int) -> Any:
    import tensorflow as tf

    from workloads.synthetic import MEAN, STDDEV

    def make(_ctx: Any = None) -> Any:
        if spec["data"] == "real":
            from workloads.data.imagenet import train_dataset

            classes = model_spec.num_classes
            return train_dataset(spec["data_dir"], spec["batch"], size).map(
                lambda x, y: (x, y % classes)
            )  # ImageNet labels are 1..1000
        shape = (spec["batch"], *model_spec.input_shape(size))
        scale = model_spec.input_scale  # workloads/synthetic.py's pixels, as the model takes them
        images = tf.random.truncated_normal(
            shape, mean=MEAN * scale, stddev=STDDEV * scale, seed=1234
        )
        labels = tf.random.uniform((spec["batch"],), 0, model_spec.num_classes, tf.int32, seed=5)
        return tf.data.Dataset.from_tensors((images, labels)).repeat()

    return make


def _build(spec: dict[str, Any], strategy: Any) -> tuple[Any, Any, int]:
    from workloads.models import get_model
    from workloads.step import build_train_step, make_optimizer

    model_spec = get_model(spec["model"])
    size = model_spec.check_image_size(spec.get("image_size"))
    with strategy.scope():
        model = model_spec.build(size)
        body = build_train_step(model, make_optimizer(spec["learning_rate"]), compile=False)
    return model_spec, body, size


def run_chief(spec: dict[str, Any], resolver: Any) -> dict[str, Any]:
    import tensorflow as tf

    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coord = tf.distribute.coordinator.ClusterCoordinator(strategy)
    model_spec, body, size = _build(spec, strategy)
    workers = len(resolver.cluster_spec().as_dict().get("worker", []))
    per_worker = coord.create_per_worker_dataset(_dataset_fn(spec, model_spec, size))
    iterator = iter(per_worker)

    @tf.function  # type: ignore[untyped-decorator]  # tf.function is missing from the stubs
    def train(it: Any) -> Any:
        images, labels = next(it)
        return strategy.run(body, args=(images, labels))

    sync = bool(spec.get("sync", False))

    def rounds(count: int) -> list[float]:
        """``count`` x ``workers`` steps; with ``sync`` a barrier (join) after each round of
        one step per worker, so no worker runs ahead (synchronous training), and the
        round times are kept as step times."""
        times: list[float] = []
        if not sync:
            for _ in range(count * workers):
                coord.schedule(train, args=(iterator,))
            coord.join()
            return times
        for _ in range(count):
            t0 = time.perf_counter()
            for _ in range(workers):
                coord.schedule(train, args=(iterator,))
            coord.join()
            times.append(time.perf_counter() - t0)
        return times

    from workloads.fingerprint.throttle import CounterWindow

    started = time.time()
    t0 = time.perf_counter()
    rounds(spec["warmup"])  # ends with a join: the warm-up is over on every worker
    warmup_s = time.perf_counter() - t0
    window = CounterWindow()
    with window:
        start = time.perf_counter()
        step_times = rounds(spec["steps"])
        wall = time.perf_counter() - start
    images = spec["batch"] * spec["steps"] * workers
    return {
        "images_per_sec": images / wall,
        "wall_s": wall,
        "images": images,
        "workers": workers,
        # synchronous rounds: a join per round of one step per worker; asynchronous: one join
        # after all the scheduled steps
        "step_times_s": step_times or [wall / spec["steps"]],
        "block_times_s": step_times or [wall],
        "sync_every": 1 if sync else int(spec["steps"]),
        "sync_mode": "round" if sync else "join at the end",
        "started_unix": started,
        "warmup_s": warmup_s,
        "size": size,
        "sync": sync,
        "nvml_window": window.result(),
    }


def run_allreduce_worker(spec: dict[str, Any]) -> dict[str, Any]:
    import tensorflow as tf

    from workloads.fingerprint.throttle import TimedWindow
    from workloads.measure import loss_check
    from workloads.timing import timed_loop

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    model_spec, body, size = _build(spec, strategy)
    workers = strategy.num_replicas_in_sync
    batches = iter(_dataset_fn(spec, model_spec, size)())

    @tf.function  # type: ignore[untyped-decorator]  # tf.function is missing from the stubs
    def train(images: Any, labels: Any) -> Any:
        per = strategy.run(body, args=(images, labels))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per, axis=None)

    def one_step() -> Any:  # the loss stays on the device; the loop syncs every K steps
        images, labels = next(batches)
        return train(images, labels)

    window = TimedWindow()
    timing = timed_loop(
        one_step,
        spec["warmup"],
        spec["steps"],
        window=window,
        sync=lambda loss: loss.numpy(),
        sync_every=spec.get("sync_every", "auto"),
    )
    losses, error = loss_check([float(v.numpy()) for v in timing.handles])
    timing.handles.clear()
    return {
        "images_per_sec": timing.images_per_sec(spec["batch"] * workers),
        "wall_s": timing.wall_s,
        "images": spec["batch"] * workers * spec["steps"],
        "workers": workers,
        "step_times_s": timing.step_times_s,
        "block_times_s": timing.block_times_s,
        "sync_every": timing.sync_every,
        "sync_mode": timing.sync_mode,
        "timing": timing.params(),
        "started_unix": timing.started_unix,
        "warmup_s": timing.first_step_s,
        "losses": losses,
        "loss_error": error,
        "size": size,
        "nvml_window": window.counters.result(),
    }


def main() -> int:
    spec = json.loads(os.environ["GPULAB_DIST_SPEC"])
    os.environ["KERAS_BACKEND"] = "tensorflow"
    from workloads.lean_imports import keep_out

    keep_out("tensorflow")  # JAX and matplotlib: 0.8 s of CPU a process, never used here
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    role, index = resolver.task_type, resolver.task_id
    if spec["mode"] == "ps" and role in ("ps", "worker"):
        server = tf.distribute.Server(
            resolver.cluster_spec(), job_name=role, task_index=index, protocol="grpc", start=True
        )
        print(f"{role}:{index} serving", flush=True)
        server.join()  # never returns: the launcher kills servers when the chief is done
        return 0
    result = run_chief(spec, resolver) if spec["mode"] == "ps" else run_allreduce_worker(spec)
    result.update(role=role, index=index, finished_at=time.time())
    _write_result(spec, result)
    if spec["mode"] == "allreduce":
        from tensorflow.python.eager import context  # type: ignore[attr-defined]

        workers = resolver.cluster_spec().num_tasks("worker")
        result["ended"] = end_together(context.context(), index=index, workers=workers)
        _write_result(spec, result)  # the result above stands if this process dies meanwhile
    print(json.dumps(result), flush=True)
    return 0


def _write_result(spec: dict[str, Any], result: dict[str, Any]) -> None:
    if spec.get("result"):
        tmp = spec["result"] + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(result, fh)
        os.replace(tmp, spec["result"])


def end_together(
    ctx: Any, index: int = 0, workers: int = 1, timeout_ms: int = END_BARRIER_MS
) -> str:
    """Wait until every worker of the job is done (``ctx``: TensorFlow's eager context; this is
    worker ``index`` of ``workers``): ``met``, ``no coordination service`` (one worker alone), or
    why the barrier failed. Never raises: this worker's result is written already, and a peer
    gone by now changes nothing of it. Worker 0 (the service's leader) then waits for the
    others' acknowledgements, so that it does not take the service down under their answers."""
    if getattr(ctx, "coordination_service", None) is None:
        return "no coordination service"
    try:
        ctx.wait_at_barrier(END_BARRIER, timeout_ms)
    except Exception as e:  # any failure here is only reported
        return f"failed: {_one_line(e)}"
    if index != 0:
        try:
            ctx.set_config_key_value(f"{END_ACK}/{index}", "1")
        except Exception as e:  # the barrier was met: the leader may have left with the ack
            print(f"end barrier met, acknowledgement: {_one_line(e)}", file=sys.stderr)
        return "met"
    missing = []
    for peer in range(1, workers):
        try:
            ctx.get_config_key_value(f"{END_ACK}/{peer}", timeout_in_ms=END_ACK_MS)
        except Exception as e:
            missing.append(f"worker:{peer} ({_one_line(e)})")
    return "met" if not missing else f"met; no acknowledgement from {', '.join(missing)}"


def _one_line(e: Exception) -> str:
    line = (str(e).strip().splitlines() or [""])[0][:200]
    return f"{type(e).__name__}: {line}"


if __name__ == "__main__":
    from workloads.quick_exit import exit_now

    exit_now(main())  # its result is written: no teardown of TensorFlow
