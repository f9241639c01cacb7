"""Scenario ``distributed``: one model trained by several processes (CLOSER 2018, figs 6-9).

Options::

    mode: ps | allreduce     ps: 1 parameter server + N workers + a coordinating chief
                             (ParameterServerStrategy, the paper's setting); allreduce: N
                             workers with MultiWorkerMirroredStrategy. Default ps.
    workers: 2               worker tasks
    hosts: [127.0.0.1]       addresses; tasks are placed round-robin (ps mode: chief and ps on
                             hosts[0], workers on the others when there are others)
    base_port: 0             first port per host (0: free ports, 127.0.0.1 only)
    launch: local | task | host
                             local: start every task here; task: start only ``task``; host:
                             start the tasks placed on this machine (the addresses of
                             ``hosts`` that are this machine's own); task and host: one
                             launcher per host, started on each host by the playbook
    task: "worker:0"         this host's task when launch is task
    deadline_s: 600          every process is SIGKILLed after this; the run is then failed
    data_dir: DIR            ImageNet-format shards for data: real (default $GPULAB_DATA_DIR)
    learning_rate: 0.005
    sync: false              ps mode: true = synchronous rounds, a step barrier after one step
                             per worker (coordinator.join), round times kept as step_times_s;
                             false = TF2's asynchronous scheduling. The record's
                             params.ps_training says which ran (allreduce: always synchronous).

Without ``hosts`` in the options, ``$GPULAB_DIST_HOSTS`` (comma-separated addresses, ports from
``$GPULAB_DIST_BASE_PORT``, default 2222) and ``$GPULAB_DIST_TASK`` (this host's task, which
sets launch: task) are used: the playbook sets them per host and the suite stays unchanged.
With ``$GPULAB_DIST_HOSTS`` naming more than one host and no ``$GPULAB_DIST_TASK``, every host
runs launch: host, so the tasks talk over the network between the hosts (the lab's NIC), not
over loopback; ``params.network`` says which it was (``loopback`` or ``between hosts``).
Each reporting task syncs with the device every K steps (the job's ``sync_every``; ps mode:
a join per round with ``sync``, else one join after all steps) and reads NVML's throttle
counters around its timed window (``params.nvml_window``). With ``data: real`` the page
cache is dropped before the tasks start, where allowed (``params.page_cache_dropped``).
TF_CONFIG for each task is JSON made by :func:`render_tf_config`. The record carries
the total throughput (``images_per_sec``: images of all workers / timed wall-clock) and the
job's elapsed time (``metrics.job_elapsed_s``: first task launched to reporting task done).
A worker whose peers never come hangs and ignores SIGTERM: at the deadline every process
group is SIGKILLed and the record is ``failed`` naming the tasks killed. Launched locally on a
GPU host, worker i gets GPU i mod n and the chief and parameter servers the CPU (unless
CUDA_VISIBLE_DEVICES is already set); every task grows GPU memory on demand. TensorFlow only:
under another backend the record is ``skipped`` with that reason (never run on TensorFlow
behind the backend's name).
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workloads.errors import InputError
from workloads.options import positive_number, with_defaults

WORKER_MODULE = "workloads.scenarios.distributed_worker"
DEFAULTS: dict[str, Any] = {
    "mode": "ps",
    "workers": 2,
    "hosts": ["127.0.0.1"],
    "base_port": 0,
    "launch": "local",
    "deadline_s": 600.0,
    "learning_rate": 0.005,
    "sync": False,
}
KNOWN = {*DEFAULTS, "task", "data_dir"}
LAUNCHES = ("local", "task", "host")


def _int_opt(out: dict[str, Any], key: str, low: int) -> None:
    v = out[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise InputError(f"option {key!r} must be an integer >= {low}, got {v!r}")


def _env_options(options: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(options)
    hosts = os.environ.get("GPULAB_DIST_HOSTS", "").strip()
    if "hosts" not in out and hosts:
        out["hosts"] = [h.strip() for h in hosts.split(",") if h.strip()]
        out.setdefault("base_port", int(os.environ.get("GPULAB_DIST_BASE_PORT", "2222")))
        task = os.environ.get("GPULAB_DIST_TASK", "").strip()
        if task:
            out.setdefault("launch", "task")
            out.setdefault("task", task)
        elif len(out["hosts"]) > 1:
            out.setdefault("launch", "host")
    return out


# Where the tasks run: left out of a suite entry's checked options unless the entry gives them,
# so that $GPULAB_DIST_HOSTS / $GPULAB_DIST_TASK on each host still apply at run time
# (options_for_run); filled with their defaults only then.
PLACEMENT = ("hosts", "base_port", "launch")


def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """An entry's options, checked, with defaults filled in except the placement ones it does
    not give (see PLACEMENT)."""
    out = _checked(options)
    return {k: v for k, v in out.items() if k in options or k not in PLACEMENT}


def options_for_run(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options a run uses: the entry's, the lab's environment where the entry does not
    place the tasks itself, then every default."""
    return _checked(_env_options(options))


def _checked(options: Mapping[str, Any]) -> dict[str, Any]:
    out = with_defaults(options, DEFAULTS, "distributed", also=KNOWN)
    if out["mode"] not in ("ps", "allreduce"):
        raise InputError(f"option 'mode' must be ps or allreduce, got {out['mode']!r}")
    _int_opt(out, "workers", 1)
    _int_opt(out, "base_port", 0)
    hosts = out["hosts"]
    if not isinstance(hosts, list) or not hosts or not all(isinstance(h, str) and h for h in hosts):
        raise InputError(f"option 'hosts' must be a non-empty list of addresses, got {hosts!r}")
    if out["base_port"] == 0 and any(not _is_local(h) for h in hosts):
        raise InputError("option 'base_port' must be set when 'hosts' names other machines")
    if out["launch"] not in LAUNCHES:
        raise InputError(f"option 'launch' must be local, task or host, got {out['launch']!r}")
    if out["launch"] == "task":
        _parse_task(out.get("task"))
    positive_number(out, "deadline_s")
    positive_number(out, "learning_rate")
    if not isinstance(out["sync"], bool):
        raise InputError(f"option 'sync' must be true or false, got {out['sync']!r}")
    return out


def _is_local(host: str) -> bool:
    return host == "localhost" or host.startswith("127.")


def is_own_address(host: str) -> bool:
    """Whether ``host`` (an address or a name) is one of this machine's own addresses: a
    socket can be bound to it."""
    try:
        infos = socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        return False
    for *_, addr in infos:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((addr[0], 0))
            except OSError:
                continue
            return True
    return False


def own_tasks(cluster: Mapping[str, list[str]]) -> list[tuple[str, int]]:
    """The tasks of ``cluster`` placed on one of this machine's addresses."""
    own: dict[str, bool] = {}
    out = []
    for role, addrs in cluster.items():
        for i, address in enumerate(addrs):
            host = address.rpartition(":")[0]
            if host not in own:
                own[host] = is_own_address(host)
            if own[host]:
                out.append((role, i))
    return out


def _parse_task(task: Any) -> tuple[str, int]:
    role, _, idx = str(task or "").partition(":")
    if role not in ("chief", "ps", "worker") or not idx.isdigit():
        raise InputError(f"option 'task' must be chief:0, ps:N or worker:N, got {task!r}")
    return role, int(idx)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cluster_spec(
    mode: str, hosts: list[str], workers: int, base_port: int = 0
) -> dict[str, list[str]]:
    """Task type -> ["addr:port", ...], tasks placed round-robin over ``hosts``."""
    next_port: dict[str, int] = {}

    def addr(host: str) -> str:
        if base_port == 0:
            return f"{host}:{_free_port()}"
        port = next_port.get(host, base_port)
        next_port[host] = port + 1
        return f"{host}:{port}"

    if mode == "allreduce":
        return {"worker": [addr(hosts[i % len(hosts)]) for i in range(workers)]}
    rest = hosts[1:] or hosts
    return {
        "chief": [addr(hosts[0])],
        "ps": [addr(hosts[0])],
        "worker": [addr(rest[i % len(rest)]) for i in range(workers)],
    }


def render_tf_config(cluster: Mapping[str, list[str]], task_type: str, task_index: int) -> str:
    """TF_CONFIG JSON for one task: the cluster (task type -> ``address:port`` list) and the
    task this process is. Made with :mod:`json` here, the same on a controller and on a host
    that received ``workloads/`` alone."""
    return json.dumps(
        {
            "cluster": {k: list(v) for k, v in cluster.items()},
            "task": {"type": task_type, "index": int(task_index)},
        }
    )


def _reachable(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1.0):
            return True
    except OSError:
        return False


def _serve_until_gone(chief: str, procs: list[Any], deadline: float) -> bool:
    """Keep server tasks up until the chief has come and gone (True), a server dies or the
    deadline passes (False). Parameter servers and PS-mode workers never exit by themselves."""
    seen, misses = False, 0
    while time.monotonic() < deadline:
        if any(p.popen.poll() is not None for p in procs):
            return False
        if _reachable(chief):
            seen, misses = True, 0
        elif seen:
            misses += 1
            if misses >= 2:
                return True
        time.sleep(0.5)
    return False


def _gpu_placement(tasks: list[tuple[str, int]]) -> dict[tuple[str, int], dict[str, str]]:
    """All tasks on one host: worker i on GPU i mod n, chief and parameter servers on the CPU
    (tf_cnn's parameter device); nothing to place without GPUs or when the user placed them."""
    from workloads.scenarios.procs import gpu_count

    n = gpu_count()
    if n == 0 or "CUDA_VISIBLE_DEVICES" in os.environ:
        return {}
    return {
        (role, idx): {"CUDA_VISIBLE_DEVICES": str(idx % n) if role == "worker" else ""}
        for role, idx in tasks
    }


def _reporters(mode: str, cluster: Mapping[str, list[str]]) -> list[tuple[str, int]]:
    if mode == "ps":
        return [("chief", 0)]
    return [("worker", i) for i in range(len(cluster["worker"]))]


NEEDS_TF = (
    "the distributed scenario needs TensorFlow (ParameterServerStrategy / "
    "MultiWorkerMirroredStrategy); backend {backend!r} has no equivalent here, so it is skipped "
    "(run this entry with --keras-backend tensorflow)"
)


def run(job: Any) -> dict[str, Any]:
    from workloads.scenarios.procs import ProcGroup

    backend = getattr(job, "backend", "tensorflow")
    if backend != "tensorflow":
        why = NEEDS_TF.format(backend=backend)
        return {"status": "skipped", "error": why, "params": {"backend": backend}}
    opts = options_for_run(job.options)
    cluster = cluster_spec(opts["mode"], opts["hosts"], opts["workers"], opts["base_port"])
    tasks = [(role, i) for role, addrs in cluster.items() for i in range(len(addrs))]
    if opts["launch"] == "task":
        tasks = [_parse_task(opts["task"])]
    elif opts["launch"] == "host":
        tasks = own_tasks(cluster)
        if not tasks:
            raise InputError(
                f"launch: host: none of the hosts {', '.join(opts['hosts'])} is an address of "
                "this machine"
            )
    deadline_s = min(float(opts["deadline_s"]), max(1.0, float(job.timeout_s) - 15.0))
    data_dir = opts.get("data_dir") or os.environ.get("GPULAB_DATA_DIR", "")
    if job.data == "real" and not data_dir:
        raise InputError("data 'real' needs option 'data_dir' or $GPULAB_DATA_DIR")
    reporters = [t for t in _reporters(opts["mode"], cluster) if t in tasks]
    placement = _gpu_placement(tasks) if opts["launch"] == "local" else {}
    cache: dict[str, Any] = {}
    if job.data == "real":  # the shards come from the disk in the timed run
        from workloads.data.page_cache import drop_page_cache

        cache = drop_page_cache()
    with tempfile.TemporaryDirectory(prefix="gpulab-dist-") as tmp:
        group = ProcGroup(Path(tmp) / "logs")
        launched = time.time()
        results: dict[tuple[str, int], Path] = {}
        try:
            by_task = {}
            for role, idx in tasks:
                result = Path(tmp) / f"{role}-{idx}.json"
                results[(role, idx)] = result
                spec = {
                    "mode": opts["mode"],
                    "model": job.model,
                    "batch": job.batch,
                    "image_size": job.image_size,
                    "warmup": job.warmup,
                    "steps": job.steps,
                    "data": job.data,
                    "data_dir": data_dir,
                    "result": str(result),
                    "learning_rate": float(opts["learning_rate"]),
                    "sync": bool(opts["sync"]),
                    "sync_every": getattr(job, "sync_every", "auto"),
                }
                env = {
                    "TF_CONFIG": render_tf_config(cluster, role, idx),
                    "GPULAB_DIST_SPEC": json.dumps(spec),
                    "KERAS_BACKEND": "tensorflow",
                    **placement.get((role, idx), {}),
                }
                by_task[(role, idx)] = group.start_python(f"{role}:{idx}", WORKER_MODULE, [], env)
            deadline = time.monotonic() + deadline_s
            if reporters:
                done = group.wait([by_task[t] for t in reporters], deadline)
            else:  # a server-only host (ps mode, launch: task): serve until the chief is gone
                done = _serve_until_gone(cluster["chief"][0], list(by_task.values()), deadline)
            finished = time.time()
            killed = group.close()  # servers never exit by themselves; hung workers neither
            pids = group.pids()
            tails = {p.name: p.tail() for p in group.procs}
            codes = {p.name: p.popen.returncode for p in group.procs}
            outputs = {
                t: json.loads(results[t].read_text()) for t in reporters if results[t].exists()
            }
        finally:
            group.close()
    params = {
        "mode": opts["mode"],
        "cluster": cluster,
        "tasks": [f"{r}:{i}" for r, i in tasks],
        "pids": pids,
        "exit_codes": codes,
        "deadline_s": deadline_s,
        "strategy": (
            "ParameterServerStrategy" if opts["mode"] == "ps" else "MultiWorkerMirroredStrategy"
        ),
        "ps_training": (
            "synchronous all-reduce"
            if opts["mode"] == "allreduce"
            else "synchronous (step barrier per round)"
            if opts["sync"]
            else "asynchronous"
        ),
        "network": network(cluster),
        "launch": opts["launch"],
        **cache,
    }
    if not done or len(outputs) < len(reporters):
        missing = [f"{r}:{i}" for r, i in reporters if (r, i) not in outputs] or [
            f"{r}:{i}" for r, i in tasks
        ]
        why = (
            f"deadline {deadline_s:g} s passed"
            if not done
            else "a reporting task exited without a result"
        )
        if not reporters and any(c is not None and c != -9 for c in codes.values()):
            why = "a server task exited before the chief was done"
        bad = "; ".join(f"{n}: rc {codes[n]} {tails[n]}" for n in missing if n in tails)
        return {
            "status": "failed",
            "error": f"{why}; SIGKILLed {', '.join(killed) or 'none'}; no result from "
            f"{', '.join(missing)}" + (f" ({bad})" if bad and done else ""),
            "params": params,
            "metrics": {"job_elapsed_s": time.time() - launched},
        }
    if not reporters:  # this host serves only (launch: task, ps mode): no throughput of its own
        return {"kind": "job", "params": params, "metrics": {"job_elapsed_s": finished - launched}}
    main = outputs[reporters[0]]
    workers = int(main["workers"])
    metrics = {
        "job_elapsed_s": max(o["finished_at"] for o in outputs.values()) - launched,
        "timed_wall_s": float(main["wall_s"]),
        "workers": float(workers),
    }
    for (role, idx), out in outputs.items():
        metrics[f"{role}{idx}_images_per_sec"] = float(out["images_per_sec"])
    from workloads.fingerprint.throttle import merge_windows

    params["image_size"] = main["size"]
    params["killed_after_done"] = killed
    ended = {f"{r}:{i}": o["ended"] for (r, i), o in outputs.items() if "ended" in o}
    if ended:  # allreduce: how each worker's end barrier went (distributed_worker.end_together)
        params["ended_together"] = ended
    params["nvml_window"] = merge_windows(
        {f"{r}:{i}": o.get("nvml_window") for (r, i), o in outputs.items()}
    )
    params["timing"] = main.get("timing") or {
        "sync_every": main.get("sync_every"),
        "sync_mode": main.get("sync_mode"),
    }
    if main.get("losses") is not None:
        params["losses"] = main["losses"]
    started = main.get("started_unix")
    fields: dict[str, Any] = {
        "images_per_sec": float(main["images_per_sec"]),
        "step_times_s": main["step_times_s"],
        "batch_size": job.batch,
        "global_batch": job.batch * workers,
        "metrics": metrics,
        "params": params,
        "startup_s": max(0.0, started - job.launched_at) if started and job.launched_at else None,
        "first_step_s": main.get("warmup_s"),
        "timed_s": float(main["wall_s"]),
        "block_times_s": main.get("block_times_s") or [],
    }
    if isinstance(main.get("sync_every"), int):
        fields["sync_every"] = main["sync_every"]
    errors = [f"{r}:{i}: {o['loss_error']}" for (r, i), o in outputs.items() if o.get("loss_error")]
    if errors:
        fields.update(status="failed", error="; ".join(errors))
    return fields


def network(cluster: Mapping[str, list[str]]) -> str:
    """``loopback`` when every task is on 127.x/localhost, else ``between hosts`` (the tasks'
    traffic crosses the network between the hosts' addresses)."""
    hosts = {a.rpartition(":")[0] for addrs in cluster.values() for a in addrs}
    if all(_is_local(h) for h in hosts):
        return "loopback"
    return "between hosts" if len(hosts) > 1 else f"one host ({next(iter(hosts))})"
