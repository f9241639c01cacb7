"""The Pulumi dynamic-provider host, started and driven the way the engine does it.

The engine runs ``pulumi-resource-pulumi-python <engine-address>`` with cwd = the program
directory (the repository root: Pulumi.yaml has no ``main:``), which execs
``$PROGRAM_DIR/.venv/bin/python -u -m pulumi.dynamic <engine-address>`` with
``PULUMI_PROJECT``, ``PULUMI_CONFIG`` and ``PULUMI_RUNTIME_<OPTION>`` in its environment.
:class:`ProviderHost` starts that same command in its own process group, reads the port from
the first stdout line, dials it with the SDK's generated stubs
(``pulumi.runtime.proto.provider_pb2_grpc.ResourceProviderStub``) and sends ``provider_pb2``
requests whose property bags are protobuf Structs made by the SDK's own
``pulumi.runtime.rpc`` serialization. It stops the host by killing its process group (by PID).

Secrets: a value wrapped as ``{SIG: SECRET_SIG, "value": v}`` (see :func:`secret`) is sent as
Pulumi's secret object when the provider accepts secrets (its Configure answer); the dynamic
provider host says it does not, so, like the engine, the client sends the plain value and marks
the same top-level outputs secret again on the way back.

:func:`program_inputs` gives the exact inputs a dynamic resource registers (``__provider``
included: the base64 dill of the provider, class by module reference), captured from the
resource's registration under Pulumi's mocks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc  # type: ignore[import-untyped,unused-ignore]
from google.protobuf import empty_pb2, struct_pb2  # type: ignore[import-untyped,unused-ignore]
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

REPO = Path(__file__).resolve().parents[2]
RESOURCE_TYPE = "pulumi-python:dynamic:Resource"
PROVIDER_KEY = "__provider"
SIG = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
# Variables of the test runner's own shell that the engine's launcher would not give a user's
# provider host (they would hide a module-shadowing or virtualenv problem).
_NOT_INHERITED = ("PYTHONPATH", "PYTHONSAFEPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")


class ProviderError(RuntimeError):
    """A provider RPC failed. ``str()`` is the gRPC details (for a provider exception: the
    traceback the host sends back); ``line`` its last non-empty line, ``code`` the status."""

    def __init__(self, method: str, code: grpc.StatusCode | None, details: str) -> None:
        self.method = method
        self.code = code
        self.details = details or ""
        lines = [ln.strip() for ln in self.details.splitlines() if ln.strip()]
        self.line = lines[-1] if lines else f"{method} failed ({code})"
        super().__init__(self.details or self.line)


def secret(value: Any) -> dict[str, Any]:
    """``value`` marked secret, as the SDK marks it (``rpc.wrap_rpc_secret``)."""
    return dict(rpc.wrap_rpc_secret(value))


def is_secret(value: Any) -> bool:
    return bool(rpc.is_rpc_secret(value))


def reveal(value: Any) -> Any:
    """``value`` with every secret marker removed (recursively)."""
    if rpc.is_rpc_secret(value):
        return reveal(value["value"])
    if isinstance(value, dict):
        return {k: reveal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [reveal(v) for v in value]
    return value


def to_struct(props: dict[str, Any]) -> struct_pb2.Struct:
    """``props`` as the protobuf Struct the engine sends (the SDK's ``serialize_properties``,
    run in a loop of its own: the caller may be inside the program's event loop)."""

    def run() -> struct_pb2.Struct:
        return asyncio.run(rpc.serialize_properties(props, {}))

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result()


def from_struct(struct: struct_pb2.Struct) -> dict[str, Any]:
    """A Struct back to Python values (secrets stay wrapped; a None-valued key is absent, as
    Pulumi treats it)."""
    return dict(rpc.deserialize_properties(struct, keep_unknowns=True) or {})


def round_trip(props: dict[str, Any]) -> dict[str, Any]:
    return from_struct(to_struct(props))


def program_inputs(resource_cls: type, name: str = "res", **kwargs: Any) -> dict[str, Any]:
    """The inputs ``resource_cls(name, **kwargs)`` registers, ``__provider`` included.

    Constructs the resource under Pulumi's mocks (they stand in for the engine) and keeps the
    ``MockResourceArgs.inputs`` of its registration: the very dict the program hands the engine,
    secrets wrapped. A keyword given as :func:`secret` is passed as ``pulumi.Output.secret``
    (made inside the registration's own event loop), as the program passes its secrets."""
    import pulumi

    captured: dict[str, Any] = {}

    class Capture(pulumi.runtime.Mocks):
        def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
            if args.name == name:
                captured.update(args.inputs)
            return f"{args.name}-id", dict(args.inputs)

        def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
            return {}

    def build() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            pulumi.runtime.set_mocks(Capture(), project="gpulab", stack="test", preview=False)

            @pulumi.runtime.test  # type: ignore[untyped-decorator,unused-ignore]
            def make() -> Any:
                args = {
                    k: pulumi.Output.secret(v["value"]) if rpc.is_rpc_secret(v) else v
                    for k, v in kwargs.items()
                }
                return resource_cls(name, **args).urn

            make()
        finally:
            asyncio.set_event_loop(None)
            loop.close()

    with ThreadPoolExecutor(1) as pool:  # own thread: own event loop
        pool.submit(build).result()
    if PROVIDER_KEY not in captured:
        raise RuntimeError(f"{resource_cls.__name__} {name} registered no {PROVIDER_KEY} input")
    return captured


def _strip_secrets(props: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    secret_keys = {k for k, v in props.items() if _has_secret(v)}
    return {k: reveal(v) for k, v in props.items()}, secret_keys


def _has_secret(value: Any) -> bool:
    if rpc.is_rpc_secret(value):
        return True
    if isinstance(value, dict):
        return any(_has_secret(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_secret(v) for v in value)
    return False


class ProviderHost:
    """``with ProviderHost() as ph: ph.create("name", program_inputs(AnsibleRun, ...))``.

    ``cwd``: the program directory the engine starts the host in; ``python``: the interpreter
    (default ``<cwd>/.venv/bin/python``, what the launcher resolves the ``virtualenv`` option
    to; when it is missing, ``start`` fails as the launcher does); ``env``: extra environment
    variables over this process's own. Each RPC is printed with its time and kept in ``calls``
    as (method, name, seconds, ok).
    """

    def __init__(
        self,
        cwd: Path = REPO,
        python: str | None = None,
        env: dict[str, str] | None = None,
        project: str = "gpulab",
        stack: str = "test",
    ) -> None:
        self.cwd = Path(cwd)
        # The launcher resolves Pulumi.yaml's `virtualenv: .venv` against its cwd.
        self.python = python or str(self.cwd / ".venv" / "bin" / "python")
        self.env = dict(env or {})
        self.project = project
        self.stack = stack
        self.proc: subprocess.Popen[bytes] | None = None
        self.channel: grpc.Channel | None = None
        self.stub: Any = None
        self.port: int | None = None
        self.accept_secrets = False
        self.config: dict[str, str] = {}
        self.calls: list[tuple[str, str, float, bool]] = []
        self.start_s = 0.0
        self.stderr = b""
        self._lock = threading.Lock()
        self._stderr_file: Any = None
        self._secret_keys: dict[str, set[str]] = {}

    # ------------------------------------------------------------------ process

    def __enter__(self) -> ProviderHost:
        self.start()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def launch_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
        env.update(
            PULUMI_PROJECT=self.project,
            PULUMI_STACK=self.stack,
            PULUMI_CONFIG=json.dumps(self.config),
            PULUMI_RUNTIME_TOOLCHAIN="pip",
            PULUMI_RUNTIME_VIRTUALENV=".venv",
        )
        env.update(self.env)
        return env

    def start(self) -> None:
        """Start a fresh host; one still running is stopped first (never left behind)."""
        self.stop()
        venv = Path(self.python).parent.parent
        if not Path(self.python).exists():
            # What pulumi-resource-pulumi-python says before Python starts (pulumi/pulumi#7061).
            raise ProviderError("start", None, f'The virtual environment "{venv}" doesn\'t exist')
        t0 = time.monotonic()
        # A file, not a pipe: a chatty provider must never block on a full stderr pipe.
        self._stderr_file = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
        self.proc = subprocess.Popen(
            [self.python, "-u", "-m", "pulumi.dynamic", "127.0.0.1:1"],
            cwd=self.cwd,
            env=self.launch_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr_file,
            start_new_session=True,  # own process group: stop() kills the whole group
        )
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline().decode().strip()
        if not first.isdigit():
            self.stop()
            err = self.stderr.decode(errors="replace").strip().splitlines()
            raise ProviderError(
                "start",
                None,
                f"pulumi.dynamic printed no port (got {first!r}): "
                + (err[-1] if err else "no stderr"),
            )
        self.port = int(first)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")
        grpc.channel_ready_future(self.channel).result(timeout=10)
        self.stub = provider_pb2_grpc.ResourceProviderStub(self.channel)
        self.start_s = time.monotonic() - t0
        print(f"[provider-host] start cwd={self.cwd} port={self.port}: {self.start_s:.2f} s")
        # The engine tries the handshake first and falls back when it is unimplemented.
        try:
            self.stub.Handshake(
                provider_pb2.ProviderHandshakeRequest(
                    engine_address="127.0.0.1:1",
                    root_directory=str(self.cwd),
                    program_directory=str(self.cwd),
                )
            )
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.UNIMPLEMENTED:
                raise ProviderError("Handshake", exc.code(), exc.details() or "") from None

    def stop(self) -> None:
        if self.channel is not None:
            with contextlib.suppress(Exception):
                self.channel.close()
            self.channel = None
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
        with contextlib.suppress(Exception):
            self._stderr_file.seek(0)
            self.stderr = self._stderr_file.read()
            self._stderr_file.close()
        self.proc = None

    # ------------------------------------------------------------------ helpers

    def urn(self, name: str) -> str:
        return f"urn:pulumi:{self.stack}::{self.project}::{RESOURCE_TYPE}::{name}"

    def _call(self, method: str, name: str, request: Any) -> Any:
        if self.stub is None:
            raise RuntimeError("ProviderHost is not started")
        t0 = time.monotonic()
        ok = False
        try:
            # No lock: the engine sends RPCs for independent resources at once, and the host
            # serves them concurrently (its gRPC server has a thread pool).
            resp = getattr(self.stub, method)(request)
            ok = True
            return resp
        except grpc.RpcError as exc:
            raise ProviderError(method, exc.code(), exc.details() or str(exc)) from None
        finally:
            dt = time.monotonic() - t0
            self.calls.append((method, name, dt, ok))
            print(
                f"[provider-host] {method:<13} {name:<28} {dt * 1000:8.1f} ms"
                f"{'' if ok else '  (error)'}"
            )

    def _send(self, name: str, props: dict[str, Any]) -> struct_pb2.Struct:
        if self.accept_secrets:
            return to_struct(props)
        plain, keys = _strip_secrets(props)
        if keys:
            self._secret_keys.setdefault(name, set()).update(keys)
        return to_struct(plain)

    def _receive(self, name: str, struct: struct_pb2.Struct) -> dict[str, Any]:
        """Outputs back; the engine marks an output secret when the input of that name was."""
        out = from_struct(struct)
        for k in self._secret_keys.get(name, ()):
            if k in out and not rpc.is_rpc_secret(out[k]):
                out[k] = secret(out[k])
        return out

    # ------------------------------------------------------------------ RPCs

    def get_plugin_info(self) -> str:
        return str(self._call("GetPluginInfo", "-", empty_pb2.Empty()).version)

    def configure(self, config: dict[str, str]) -> None:
        """``config``: ``project:key`` -> value, as ``pulumi config`` holds it."""
        self.config = dict(config)
        args = to_struct(dict(config))
        resp = self._call(
            "Configure",
            "-",
            provider_pb2.ConfigureRequest(
                variables=dict(config), args=args, acceptSecrets=True, acceptResources=True
            ),
        )
        self.accept_secrets = bool(resp.acceptSecrets)

    def check(
        self, name: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        req = provider_pb2.CheckRequest(
            urn=self.urn(name),
            name=name,
            type=RESOURCE_TYPE,
            olds=self._send(name, olds),
            news=self._send(name, news),
        )
        resp = self._call("Check", name, req)
        return self._receive(name, resp.inputs), [(f.property, f.reason) for f in resp.failures]

    def diff(
        self, name: str, id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> dict[str, Any]:
        req = provider_pb2.DiffRequest(
            id=id,
            urn=self.urn(name),
            name=name,
            type=RESOURCE_TYPE,
            olds=self._send(name, olds),
            news=self._send(name, news),
        )
        resp = self._call("Diff", name, req)
        return {
            "changes": resp.changes == provider_pb2.DiffResponse.DIFF_SOME,
            "changes_code": provider_pb2.DiffResponse.DiffChanges.Name(resp.changes),
            "replaces": list(resp.replaces),
            "delete_before_replace": bool(resp.deleteBeforeReplace),
            "diffs": list(resp.diffs),
        }

    def create(self, name: str, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        req = provider_pb2.CreateRequest(
            urn=self.urn(name), name=name, type=RESOURCE_TYPE, properties=self._send(name, props)
        )
        resp = self._call("Create", name, req)
        return resp.id, self._receive(name, resp.properties)

    def read(self, name: str, id: str, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        struct = self._send(name, props)
        req = provider_pb2.ReadRequest(
            id=id,
            urn=self.urn(name),
            name=name,
            type=RESOURCE_TYPE,
            properties=struct,
            inputs=struct,
        )
        resp = self._call("Read", name, req)
        return resp.id, self._receive(name, resp.properties)

    def update(
        self, name: str, id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> dict[str, Any]:
        req = provider_pb2.UpdateRequest(
            id=id,
            urn=self.urn(name),
            name=name,
            type=RESOURCE_TYPE,
            olds=self._send(name, olds),
            news=self._send(name, news),
        )
        return self._receive(name, self._call("Update", name, req).properties)

    def delete(self, name: str, id: str, props: dict[str, Any]) -> None:
        req = provider_pb2.DeleteRequest(
            id=id,
            urn=self.urn(name),
            name=name,
            type=RESOURCE_TYPE,
            properties=self._send(name, props),
        )
        self._call("Delete", name, req)

    def summary(self) -> str:
        """One line per RPC made: method, resource, milliseconds."""
        return "\n".join(
            f"{m:<13} {n:<28} {dt * 1000:8.1f} ms{'' if ok else ' (error)'}"
            for m, n, dt, ok in self.calls
        )


__all__ = [
    "PROVIDER_KEY",
    "REPO",
    "ProviderError",
    "ProviderHost",
    "from_struct",
    "is_secret",
    "program_inputs",
    "reveal",
    "round_trip",
    "secret",
    "to_struct",
]
