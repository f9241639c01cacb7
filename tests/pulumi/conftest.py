"""Pulumi mock runtime for tests/pulumi: ONE autouse fixture installs fresh mocks per test.

The mocks stand in for the Pulumi engine and the OpenStack/vSphere providers (no CLI, no
plugins here): every registered resource and every data-source call is recorded on the
:class:`LabMocks` the fixture yields, and computed outputs get plausible fake values.
"""

from __future__ import annotations

import pulumi
import pytest

from tests.pulumi.mocks import LabMocks


@pytest.fixture(autouse=True)
def pulumi_mocks() -> LabMocks:
    mocks = LabMocks()
    pulumi.runtime.set_mocks(mocks, project="gpulab", stack="test", preview=False)
    return mocks
