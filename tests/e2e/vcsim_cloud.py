"""vsphere-gpu's cloud in the end-to-end lab: govmomi's vCenter simulator, for real.

The pulumi-vsphere provider cannot run here, so the engine double hands each
``vsphere:index/virtualMachine:VirtualMachine`` to this class, which clones a VM of that name
in the simulator (on the GPU cluster DC0_C0, whose hosts have P100s and grid_p100 profiles) and
destroys it on ``down``. As pulumi-vsphere does, the create waits until the powered-on guest
reports an address (the simulator's guest model boots it: tests/parts/vcsim/main.go); the
guest's address is set to the lab host's, so a power cycle brings that address back. A second
VM of the same name in the folder is refused, as vCenter refuses it (DuplicateName). The
``VgpuProfile`` dynamic resource then attaches its profile to that VM through the real provider
host and pyVmomi, as on a real vCenter, and waits for the guest to come back.
"""

from __future__ import annotations

from typing import Any

VM = "vsphere:index/virtualMachine:VirtualMachine"
GPU_CLUSTER_HOST_PREFIX = "DC0_C0_H"


class VcsimCloud:
    def __init__(self, host: str, port: int, user: str, password: str) -> None:
        from infra.clouds import vsphere

        self.si = vsphere.connect(host, user, password, port=port, insecure=True)
        self.made: list[str] = []

    def _vms(self) -> list[Any]:
        from pyVmomi import vim

        content = self.si.RetrieveContent()
        view = content.viewManager.CreateContainerView(
            content.rootFolder, [vim.VirtualMachine], True
        )
        try:
            return list(view.view)
        finally:
            view.Destroy()

    def create(
        self, typ: str, name: str, inputs: dict[str, Any], outs: dict[str, Any], rid: str = ""
    ) -> None:
        if typ != VM:
            return
        from pyVim.task import WaitForTask
        from pyVmomi import vim

        from infra.clouds import vsphere

        if any(vm.name == name for vm in self._vms()):
            raise RuntimeError(f"vCenter: DuplicateName: the name '{name}' already exists")
        source = next(
            vm
            for vm in self._vms()
            if vm.runtime.host is not None
            and vm.runtime.host.name.startswith(GPU_CLUSTER_HOST_PREFIX)
            and vm.name not in self.made
        )
        spec = vim.vm.CloneSpec(location=vim.vm.RelocateSpec(), powerOn=True, template=False)
        WaitForTask(source.CloneVM_Task(folder=source.parent, name=name, spec=spec))
        self.made.append(name)
        vm = next(vm for vm in self._vms() if vm.name == name)
        # pulumi-vsphere powers the clone on (the simulator's clone ignores spec.powerOn) and
        # waits for the guest's network
        vsphere.set_power(vm, name, on=True)
        vsphere.wait_for_guest(vm, name, 60)
        address = outs.get("defaultIpAddress")
        if address:  # the guest's address is the lab host's
            extra = [vim.option.OptionValue(key="SET.guest.ipAddress", value=address)]
            WaitForTask(vm.ReconfigVM_Task(spec=vim.vm.ConfigSpec(extraConfig=extra)))
        self._outputs(vm, outs)

    @staticmethod
    def _outputs(vm: Any, outs: dict[str, Any]) -> None:
        """What pulumi-vsphere's VirtualMachine outputs for the VM: its moid and BIOS UUID."""
        outs["moid"] = vm._moId
        outs["uuid"] = vm.config.uuid

    def delete(self, res: Any) -> None:
        if res.typ != VM:
            return
        from pyVim.task import WaitForTask

        for vm in [v for v in self._vms() if v.name == res.name]:
            if vm.runtime.powerState == "poweredOn":
                WaitForTask(vm.PowerOffVM_Task())
            WaitForTask(vm.Destroy_Task())
        if res.name in self.made:
            self.made.remove(res.name)

    def profiles(self, name: str) -> list[str]:
        """The vGPU profiles the simulator holds for VM ``name``."""
        from pyVmomi import vim

        vm = next(v for v in self._vms() if v.name == name)
        return [
            str(d.backing.vgpu)
            for d in vm.config.hardware.device
            if isinstance(d, vim.vm.device.VirtualPCIPassthrough)
            and isinstance(d.backing, vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo)
        ]

    def exists(self, name: str) -> bool:
        return any(v.name == name for v in self._vms())

    def close(self) -> None:
        from pyVim.connect import Disconnect

        Disconnect(self.si)
