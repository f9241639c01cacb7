"""The dynamic-provider host, started as the Pulumi engine starts it, for the end-to-end lab.

Uses ``tests.parts.provider_host.ProviderHost`` when the repository has it; this module's
:class:`ProviderHost` is the same small client (``python -u -m pulumi.dynamic`` in its own
process group with cwd = the repository root, the SDK's generated gRPC stubs) so the end-to-end
test does not depend on which one is there. Errors raise :class:`ProviderError` whose ``line``
is the provider's exception message (the last line of the traceback the host sends back).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

REPO = Path(__file__).resolve().parents[2]
PROJECT = "gpulab"
RESOURCE = "pulumi-python:dynamic:Resource"


class ProviderError(RuntimeError):
    """A provider method failed; ``str()`` is the provider's own message (last line)."""

    def __init__(self, method: str, name: str, details: str) -> None:
        lines = [ln for ln in (details or "").strip().splitlines() if ln.strip()]
        self.details = details
        self.line = lines[-1].strip() if lines else f"{method} failed"
        super().__init__(f"{method} {name}: {self.line}")


def _struct(props: dict[str, Any]) -> Any:
    """A protobuf Struct of ``props`` as the engine sends it (serialized in a loop of its own:
    the caller may be inside the program's event loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(rpc.serialize_properties(props, {}))).result()


def _plain(struct: Any) -> dict[str, Any]:
    return dict(rpc.deserialize_properties(struct) or {})


class ProviderHost:
    """``with ProviderHost(stack) as ph: ph.create(name, props)``; see the module docstring."""

    def __init__(self, stack: str = "e2e", env: dict[str, str] | None = None) -> None:
        self.stack = stack
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()

    def urn(self, name: str, typ: str = RESOURCE) -> str:
        return f"urn:pulumi:{self.stack}::{PROJECT}::{typ}::{name}"

    def __enter__(self) -> ProviderHost:
        env = dict(os.environ if self.env is None else self.env)
        env.update(PULUMI_PROJECT=PROJECT, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "pulumi.dynamic", "127.0.0.1:1"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        port = self.proc.stdout.readline().decode().strip()
        if not port.isdigit():
            self.close()
            raise RuntimeError(f"pulumi.dynamic did not print its port (got {port!r})")
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = provider_pb2_grpc.ResourceProviderStub(self.channel)
        self.stub.Configure(provider_pb2.ConfigureRequest(args=_struct({})))
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.channel.close()
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)

    def _call(self, method: str, name: str, request: Any) -> Any:
        try:
            with self.lock:
                return getattr(self.stub, method)(request)
        except grpc.RpcError as exc:
            raise ProviderError(method, name, exc.details() or str(exc)) from None

    def check(
        self, name: str, olds: dict[str, Any], news: dict[str, Any], typ: str = RESOURCE
    ) -> tuple[dict[str, Any], list[str]]:
        resp = self._call(
            "Check",
            name,
            provider_pb2.CheckRequest(
                urn=self.urn(name, typ), olds=_struct(olds), news=_struct(news)
            ),
        )
        return _plain(resp.inputs), [f"{f.property}: {f.reason}" for f in resp.failures]

    def diff(
        self, name: str, id_: str, olds: dict[str, Any], news: dict[str, Any], typ: str = RESOURCE
    ) -> dict[str, Any]:
        resp = self._call(
            "Diff",
            name,
            provider_pb2.DiffRequest(
                id=id_, urn=self.urn(name, typ), olds=_struct(olds), news=_struct(news)
            ),
        )
        return {
            "changes": resp.changes == provider_pb2.DiffResponse.DIFF_SOME,
            "replaces": list(resp.replaces),
        }

    def create(
        self, name: str, props: dict[str, Any], typ: str = RESOURCE
    ) -> tuple[str, dict[str, Any]]:
        resp = self._call(
            "Create",
            name,
            provider_pb2.CreateRequest(urn=self.urn(name, typ), properties=_struct(props)),
        )
        return resp.id, _plain(resp.properties)

    def update(
        self, name: str, id_: str, olds: dict[str, Any], news: dict[str, Any], typ: str = RESOURCE
    ) -> dict[str, Any]:
        resp = self._call(
            "Update",
            name,
            provider_pb2.UpdateRequest(
                id=id_, urn=self.urn(name, typ), olds=_struct(olds), news=_struct(news)
            ),
        )
        return _plain(resp.properties)

    def delete(self, name: str, id_: str, props: dict[str, Any], typ: str = RESOURCE) -> None:
        self._call(
            "Delete",
            name,
            provider_pb2.DeleteRequest(id=id_, urn=self.urn(name, typ), properties=_struct(props)),
        )
