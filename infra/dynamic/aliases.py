"""The alias that keeps a dynamic resource made under the SDK's default type.

``pulumi.dynamic.Resource`` without ``module``/``name`` registers as
:data:`SDK_DEFAULT_TYPE`; gpulab's dynamic resources are named
(``pulumi-python:dynamic/gpulab:<Name>``, shown as ``gpulab:<Name>``). The type is part of a
resource's URN, so a resource that got its name after stacks were made with the default type
carries this alias: the engine finds the stored resource under the old URN (same name, same
parent) and steps it as usual (same, update) instead of creating a new one and deleting the
old (for ``VgpuProfile``, a detach and attach that powers the VM off twice).
"""

from __future__ import annotations

import pulumi

SDK_DEFAULT_TYPE = "pulumi-python:dynamic:Resource"


def formerly_default_typed(opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
    """``opts`` plus an alias to :data:`SDK_DEFAULT_TYPE` (the caller's aliases are kept)."""
    alias = pulumi.Alias(type_=SDK_DEFAULT_TYPE)
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(aliases=[alias]))
