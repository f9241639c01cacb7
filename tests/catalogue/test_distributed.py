"""Distributed training with real TensorFlow processes on 127.0.0.1, and the kill deadline."""

from __future__ import annotations

import json

import pytest

from workloads.errors import InputError
from workloads.records import make_record
from workloads.scenarios import Job, distributed
from workloads.scenarios.procs import pid_alive


def _job(**options: object) -> Job:
    return Job(
        suite="t",
        experiment="distributed_synthetic",
        model="mnist_cnn",
        scenario="distributed",
        batch=16,
        steps=4,
        warmup=1,
        options=dict(options),
        timeout_s=300,
    )


def _record(fields: dict) -> dict:
    return make_record(
        run_id="r", suite="t", experiment="d", model="mnist_cnn", scenario="distributed", **fields
    )


@pytest.mark.tf
def test_parameter_server_one_ps_two_workers() -> None:
    """Synchronous parameter-server training (sync: a step barrier per round): one round
    time per timed step, and the mode in the record."""
    rec = _record(distributed.run(_job(mode="ps", workers=2, sync=True)))
    assert rec["status"] == "ok", rec.get("error")
    p = rec["params"]
    assert p["strategy"] == "ParameterServerStrategy"
    assert p["ps_training"] == "synchronous (step barrier per round)"
    assert len(rec["step_times_s"]) == 4 and all(t > 0 for t in rec["step_times_s"])
    assert sorted(p["tasks"]) == ["chief:0", "ps:0", "worker:0", "worker:1"]
    assert all(a.startswith("127.0.0.1:") for addrs in p["cluster"].values() for a in addrs)
    assert rec["global_batch"] == 32 and rec["images_per_sec"] > 0
    m = rec["metrics"]
    assert m["job_elapsed_s"] > m["timed_wall_s"] > 0
    assert rec["images_per_sec"] == pytest.approx(16 * 4 * 2 / m["timed_wall_s"])
    # parameter servers and PS-mode workers never exit by themselves: the scenario kills them
    assert sorted(p["killed_after_done"]) == ["ps:0", "worker:0", "worker:1"]
    assert not any(pid_alive(pid) for pid in p["pids"])
    # a join per round: the host syncs every step; the rounds are the blocks
    assert rec["sync_every"] == 1 and rec["block_times_s"] == rec["step_times_s"]
    assert rec["timed_s"] == m["timed_wall_s"] and rec["first_step_s"] > 0
    assert rec["startup_s"] is None  # an in-process job has no launch time
    assert p["network"] == "loopback" and p["launch"] == "local"
    assert p["nvml_window"]["parts"]["chief:0"]["present"] is False  # no driver here


@pytest.mark.tf
def test_worker_whose_peer_never_comes_is_killed_at_the_deadline() -> None:
    # Only worker:0 of a 2-worker all-reduce job starts here (its peer would be another
    # host's task): it waits for the peer forever, so the deadline must SIGKILL it.
    fields = distributed.run(
        _job(mode="allreduce", workers=2, launch="task", task="worker:0", deadline_s=6)
    )
    rec = _record(fields)
    assert rec["status"] == "failed"
    assert "deadline 6 s passed" in rec["error"] and "SIGKILLed worker:0" in rec["error"]
    assert rec["params"]["exit_codes"]["worker:0"] == -9
    assert rec["metrics"]["job_elapsed_s"] >= 6
    assert not any(pid_alive(pid) for pid in rec["params"]["pids"])


def test_tf_config_json() -> None:
    cluster = distributed.cluster_spec("ps", ["10.0.0.1", "10.0.0.2", "10.0.0.3"], 2, 2222)
    assert cluster == {
        "chief": ["10.0.0.1:2222"],
        "ps": ["10.0.0.1:2223"],
        "worker": ["10.0.0.2:2222", "10.0.0.3:2222"],
    }
    cfg = json.loads(distributed.render_tf_config(cluster, "worker", 1))
    assert cfg == {"cluster": cluster, "task": {"type": "worker", "index": 1}}
    ar = distributed.cluster_spec("allreduce", ["a", "b"], 3, 5000)
    assert ar == {"worker": ["a:5000", "b:5000", "a:5001"]}
    for c, role, i in ((cluster, "chief", 0), (cluster, "ps", 0), (ar, "worker", 2)):
        cfg = json.loads(distributed.render_tf_config(c, role, i))
        assert cfg == {"cluster": c, "task": {"type": role, "index": i}}


def test_hosts_and_task_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_DIST_HOSTS", "10.1.0.5, 10.1.0.6")
    monkeypatch.setenv("GPULAB_DIST_TASK", "worker:1")
    opts = distributed.check_options(distributed._env_options({"mode": "allreduce"}))
    assert opts["hosts"] == ["10.1.0.5", "10.1.0.6"] and opts["base_port"] == 2222
    assert (opts["launch"], opts["task"]) == ("task", "worker:1")


def test_several_hosts_without_a_task_start_the_tasks_of_this_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A lab's hosts all get the same GPULAB_DIST_HOSTS: each starts the tasks placed on its
    own addresses, so the tasks talk over the network between the hosts."""
    monkeypatch.setenv("GPULAB_DIST_HOSTS", "127.0.0.1,192.0.2.7")  # 192.0.2.7: not this host
    monkeypatch.delenv("GPULAB_DIST_TASK", raising=False)
    opts = distributed.options_for_run({"mode": "allreduce"})
    assert opts["launch"] == "host" and opts["hosts"] == ["127.0.0.1", "192.0.2.7"]
    cluster = distributed.cluster_spec("allreduce", opts["hosts"], 3, 2222)
    assert cluster == {"worker": ["127.0.0.1:2222", "192.0.2.7:2222", "127.0.0.1:2223"]}
    assert distributed.own_tasks(cluster) == [("worker", 0), ("worker", 2)]
    assert distributed.network(cluster) == "between hosts"
    assert distributed.network({"worker": ["127.0.0.1:1", "localhost:2"]}) == "loopback"
    assert distributed.is_own_address("localhost") and not distributed.is_own_address("192.0.2.7")
    assert not distributed.is_own_address("no-such-host.invalid")
    monkeypatch.setenv("GPULAB_DIST_HOSTS", "192.0.2.7,192.0.2.8")
    with pytest.raises(
        InputError, match=r"none of the hosts 192\.0\.2\.7, 192\.0\.2\.8 is an address"
    ):
        distributed.run(_job(mode="allreduce"))
    monkeypatch.setenv("GPULAB_DIST_HOSTS", "192.0.2.7")  # one host: still launch: local
    assert distributed.options_for_run({})["launch"] == "local"


def test_a_suite_entry_takes_the_hosts_from_the_environment_at_run_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A suite's entries are checked when the suite loads; the tasks' placement they do not
    give stays open until the run, where each host's GPULAB_DIST_HOSTS fills it (not the
    loopback default the check would otherwise have written into the entry)."""
    from workloads.suites import parse_suite

    doc = {
        "experiments": [
            {"experiment": "d", "model": "mnist_cnn", "scenario": "distributed",
             "options": {"mode": "allreduce", "workers": 2}},
            {"experiment": "pinned", "model": "mnist_cnn", "scenario": "distributed",
             "options": {"mode": "allreduce", "hosts": ["127.0.0.1"]}},
        ]
    }  # fmt: skip
    open_entry, pinned = parse_suite(doc, "t").entries
    assert "hosts" not in open_entry.options and "launch" not in open_entry.options
    assert open_entry.options["workers"] == 2 and open_entry.options["deadline_s"] == 600.0
    monkeypatch.setenv("GPULAB_DIST_HOSTS", "127.0.0.1,192.0.2.7")
    monkeypatch.delenv("GPULAB_DIST_TASK", raising=False)
    run = distributed.options_for_run(open_entry.options)
    assert run["hosts"] == ["127.0.0.1", "192.0.2.7"] and run["launch"] == "host"
    assert run["base_port"] == 2222
    # an entry that places its tasks itself keeps them
    assert distributed.options_for_run(pinned.options)["hosts"] == ["127.0.0.1"]
    monkeypatch.delenv("GPULAB_DIST_HOSTS")
    assert distributed.options_for_run(open_entry.options)["hosts"] == ["127.0.0.1"]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"mode": "ring"}, "'mode'"),
        ({"sync": "yes"}, "'sync'"),
        ({"workers": 0}, "'workers'"),
        ({"hosts": []}, "'hosts'"),
        ({"hosts": ["10.0.0.9"]}, "'base_port'"),
        ({"launch": "task", "task": "boss:0"}, "'task'"),
        ({"launch": "everywhere"}, "'launch' must be local, task or host"),
        ({"deadline_s": -1}, "'deadline_s'"),
        ({"gpus": 2}, "'gpus'"),
    ],
)
def test_distributed_option_errors(options: dict, match: str) -> None:
    with pytest.raises(InputError, match=match):
        distributed.check_options(options)


def _free_block(n: int) -> int:
    import socket

    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n >= 65535:
            continue
        try:
            socks = []
            for port in range(base, base + n):
                sk = socket.socket()
                socks.append(sk)
                sk.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sk in socks:
                sk.close()
    raise RuntimeError("no block of free ports")


@pytest.mark.tf
def test_one_task_per_host_launch_as_across_hosts() -> None:
    # What each host of a lab does: start only its own task from the same host list and base
    # port. Here the four "hosts" are four concurrent scenario runs on 127.0.0.1.
    from concurrent.futures import ThreadPoolExecutor

    base = _free_block(4)
    tasks = ["chief:0", "ps:0", "worker:0", "worker:1"]

    def one(task: str) -> dict:
        return distributed.run(
            _job(
                mode="ps",
                workers=2,
                hosts=["127.0.0.1"],
                base_port=base,
                launch="task",
                task=task,
                deadline_s=120,
            )
        )

    with ThreadPoolExecutor(4) as pool:
        out = dict(zip(tasks, pool.map(one, tasks), strict=True))
    chief = _record(out["chief:0"])
    assert chief["status"] == "ok", chief.get("error")
    assert chief["params"]["cluster"]["worker"] == [
        f"127.0.0.1:{base + 2}",
        f"127.0.0.1:{base + 3}",
    ]
    assert chief["images_per_sec"] > 0 and chief["global_batch"] == 32
    for task in tasks[1:]:  # servers stop once the chief has come and gone: ok, kind job
        rec = _record(out[task])
        assert (rec["status"], rec["kind"]) == ("ok", "job"), (task, rec.get("error"))
    pids = [p for f in out.values() for p in f["params"]["pids"]]
    assert len(pids) == 4 and not any(pid_alive(p) for p in pids)


@pytest.mark.tf
def test_multi_worker_all_reduce_on_real_tfrecord_shards(tmp_path) -> None:
    from workloads.data.imagenet_writer import write_imagenet_like

    write_imagenet_like(tmp_path, images=12, shards=2, image_size=80, classes=1000)
    job = Job(
        suite="t",
        experiment="distributed_real",
        model="alexnet",
        data="real",
        scenario="distributed",
        batch=2,
        steps=2,
        warmup=1,
        image_size=67,
        options={"mode": "allreduce", "workers": 2, "data_dir": str(tmp_path)},
        timeout_s=300,
    )
    rec = _record(distributed.run(job))
    assert rec["status"] == "ok", rec.get("error")
    assert rec["global_batch"] == 4 and rec["params"]["image_size"] == 67
    m = rec["metrics"]
    assert rec["params"]["strategy"] == "MultiWorkerMirroredStrategy"
    assert len(rec["step_times_s"]) == 2 and m["workers"] == 2.0
    assert m["worker0_images_per_sec"] > 0 and m["worker1_images_per_sec"] > 0
    # both workers waited at the end barrier and met there (distributed_worker.end_together)
    assert rec["params"]["ended_together"] == {"worker:0": "met", "worker:1": "met"}
    assert rec["images_per_sec"] == pytest.approx(4 * 2 / m["timed_wall_s"])
    assert not any(pid_alive(pid) for pid in rec["params"]["pids"])


def test_gpu_placement_with_an_nvml_double(monkeypatch: pytest.MonkeyPatch) -> None:
    """Double for NVML's GPU count: worker i on GPU i mod n, chief and ps on the CPU."""
    from workloads.scenarios import procs

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(procs, "gpu_count", lambda: 2)
    tasks = [("chief", 0), ("ps", 0), ("worker", 0), ("worker", 1), ("worker", 2)]
    placed = distributed._gpu_placement(tasks)
    assert placed[("chief", 0)] == placed[("ps", 0)] == {"CUDA_VISIBLE_DEVICES": ""}
    assert [placed[("worker", i)]["CUDA_VISIBLE_DEVICES"] for i in range(3)] == ["0", "1", "0"]
    monkeypatch.setattr(procs, "gpu_count", lambda: 0)
    assert distributed._gpu_placement(tasks) == {}
    env = procs.child_env()
    assert env["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"


def test_other_backend_is_skipped_with_the_reason() -> None:
    job = _job(mode="ps")
    job.backend = "jax"
    fields = distributed.run(job)
    assert fields["status"] == "skipped" and "needs TensorFlow" in fields["error"]
