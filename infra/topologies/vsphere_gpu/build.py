"""``vsphere-gpu``'s builder: VMs cloned from a template with guest customization, reaching
GPUs by

- ``passthrough``: DirectPath I/O devices pinned to ``gpu_host``, full locked memory
  reservation, EFI, 64-bit MMIO sized to the GPUs' BARs;
- ``vgpu``: an NVIDIA vGPU profile attached by :class:`infra.dynamic.vgpu.VgpuProfile`
  (the provider has no vGPU argument), full locked memory reservation; with
  ``gpulab:vgpu_policy``, the :class:`infra.dynamic.vgpu_policy.VgpuPolicy` resource first
  (in effect on the hosts, or the lab refused), every VM after it, and the records' sharing
  built from the policy it reads back;
- ``bitfusion``: plain client VMs; the Bitfusion server is recorded as a host.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_vsphere as vsphere

from infra.clouds.vgpu_policy import esxcli_command
from infra.dynamic.vgpu import VgpuProfile
from infra.dynamic.vgpu_policy import VgpuPolicy
from infra.hosts import Host
from infra.topologies.common import TYPE_PREFIX, host_groups
from infra.topologies.vsphere_gpu import SPEC
from infra.topologies.vsphere_gpu.args import VsphereGpuArgs
from workloads.vgpu_factors import VgpuFactors


def mmio_size_gb(gpus: int, bar_gb: int) -> int:
    """``pciPassthru.64bitMMIOSizeGB``: the next power of two over the GPUs' total BAR.

    Strictly over, as VMware's guidance does for power-of-two totals: 1 x 16 GB -> 32,
    2 x 16 GB -> 64, 3 x 16 GB -> 64.
    """
    total = gpus * bar_gb
    size = 1
    while size <= total:
        size *= 2
    return size


def passthrough_extra_config(args: VsphereGpuArgs) -> dict[str, str]:
    assert args.gpus_per_vm and args.gpu_bar_gb
    return {
        "pciPassthru.use64bitMMIO": "TRUE",
        "pciPassthru.64bitMMIOSizeGB": str(mmio_size_gb(args.gpus_per_vm, args.gpu_bar_gb)),
    }


KW_GROUP = "knowledge_workers"


def sharing_detail(args: VsphereGpuArgs, in_effect: str | None = None) -> str:
    """The records' sharing of a vGPU arm (workloads/vgpu_factors.py):
    ``vgpu:<profile>[.<policy>][.<N>-per-gpu][.kw<N>]``, the policy as the hosts report it in
    effect (``in_effect``, from the VgpuPolicy resource), never the stack's word for it."""
    return VgpuFactors(
        str(args.vgpu_profile), in_effect, args.vgpu_vms_per_gpu, args.kw_vm_count
    ).sharing()


def vgpu_factors(args: VsphereGpuArgs, policy: Any = None) -> dict[str, Any]:
    """Host vars of a vGPU VM: the arm's factors, as the hosts output and the records carry
    them (``workload_run_sharing`` becomes the records' sharing). ``policy``: the VgpuPolicy
    resource, whose ``in_effect`` (read from the hosts) the records state."""
    in_effect = policy.in_effect if policy is not None else None
    out: dict[str, Any] = {
        "vgpu_profile": args.vgpu_profile,
        "vgpu_vms_per_gpu": args.vgpu_vms_per_gpu,
        "vgpu_policy": args.vgpu_policy,
        "vgpu_policy_command": esxcli_command(args.vgpu_policy) if args.vgpu_policy else None,
        "vgpu_policy_in_effect": in_effect,
        "kw_vms": args.kw_vm_count,
        "workload_run_sharing": (
            in_effect.apply(lambda p: sharing_detail(args, p))
            if in_effect is not None
            else sharing_detail(args)
        ),
    }
    return {k: v for k, v in out.items() if v is not None}


class _Cloner:
    """Clones of the template with Linux guest customization, named ``name``."""

    def __init__(
        self,
        args: VsphereGpuArgs,
        parent: pulumi.ComponentResource,
        cluster: Any,
        datastore: Any,
        network: Any,
        template: Any,
    ) -> None:
        self.args, self.parent, self.provider = args, parent, getattr(parent, "provider", None)
        self.cluster, self.datastore, self.network, self.template = (
            cluster,
            datastore,
            network,
            template,
        )

    def vm(
        self,
        name: str,
        cpus: int | None,
        memory_mb: int | None,
        annotation: str,
        extra: dict[str, Any],
        after: list[Any],
    ) -> vsphere.VirtualMachine:
        args, template = self.args, self.template
        domain = args.domain
        assert domain is not None  # infra.config defaults it (gpulab.local)
        return vsphere.VirtualMachine(
            name,
            name=name,
            resource_pool_id=self.cluster.resource_pool_id,
            datastore_id=self.datastore.id,
            folder=args.folder,
            num_cpus=cpus,
            memory=memory_mb,
            guest_id=template.guest_id,
            scsi_type=template.scsi_type,
            annotation=annotation,
            network_interfaces=[
                vsphere.VirtualMachineNetworkInterfaceArgs(
                    network_id=self.network.id,
                    adapter_type=template.network_interface_types[0],
                )
            ],
            disks=[
                vsphere.VirtualMachineDiskArgs(
                    label="disk0",
                    size=template.disks[0].size,
                    thin_provisioned=template.disks[0].thin_provisioned,
                )
            ],
            clone=vsphere.VirtualMachineCloneArgs(
                template_uuid=template.id,
                customize=vsphere.VirtualMachineCloneCustomizeArgs(
                    linux_options=vsphere.VirtualMachineCloneCustomizeLinuxOptionsArgs(
                        host_name=name, domain=domain
                    ),
                    network_interfaces=[vsphere.VirtualMachineCloneCustomizeNetworkInterfaceArgs()],
                ),
            ),
            **extra,
            # A VM's name is fixed (<lab>-gpu-<i>, <lab>-kw-<i>) and unique in its folder: a
            # replacement must delete the old VM before it clones the new one.
            opts=pulumi.ResourceOptions(
                parent=self.parent,
                provider=self.provider,
                delete_before_replace=True,
                depends_on=after,
            ),
        )


class VsphereGpuLab(pulumi.ComponentResource):
    hosts: list[Host]

    def __init__(self, args: VsphereGpuArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TYPE_PREFIX}:VsphereGpuLab", args.lab, None, opts)
        self.provider = vsphere.Provider(
            f"{args.lab}-vsphere",
            vsphere_server=args.vsphere_server,
            user=args.vsphere_user,
            password=args.vsphere_password,
            allow_unverified_ssl=args.vsphere_insecure,
            opts=pulumi.ResourceOptions(parent=self),
        )
        invoke = pulumi.InvokeOptions(parent=self, provider=self.provider)
        dc = vsphere.get_datacenter_output(name=args.datacenter, opts=invoke)
        cluster = vsphere.get_compute_cluster_output(
            name=args.cluster, datacenter_id=dc.id, opts=invoke
        )
        datastore = vsphere.get_datastore_output(
            name=args.datastore, datacenter_id=dc.id, opts=invoke
        )
        network = vsphere.get_network_output(name=args.network, datacenter_id=dc.id, opts=invoke)
        template = vsphere.get_virtual_machine_output(
            name=args.template, datacenter_id=dc.id, opts=invoke
        )
        gpu_host = (
            vsphere.get_host_output(name=args.gpu_host, datacenter_id=dc.id, opts=invoke)
            if args.mode == "passthrough"
            else None
        )
        self.vms: list[vsphere.VirtualMachine] = []
        self.vgpus: list[Any] = []
        self.hosts = []
        # The policy first: its reboots need hosts without powered-on VMs, and gpulab powers
        # off none, so the lab's own VMs come after it (docs/topologies.md).
        self.policy = self._vgpu_policy(args) if args.mode == "vgpu" and args.vgpu_policy else None
        after = [self.policy] if self.policy is not None else []
        vm_gpu_path = SPEC.gpu_path(args)
        clone = _Cloner(args, self, cluster, datastore, network, template)
        for i in range(args.host_count or 1):
            name = f"{args.lab}-gpu-{i}"
            vm = clone.vm(
                name,
                args.vm_cpus,
                args.vm_memory_mb,
                f"gpulab lab={args.lab} topology={args.topology} mode={args.mode}",
                self._gpu_args(args, i, template, gpu_host),
                after,
            )
            self.vms.append(vm)
            host_vars: dict[str, Any] = {"lab": args.lab, "vsphere_mode": args.mode}
            if args.mode == "vgpu":
                self.vgpus.append(self._attach_vgpu(args, name, vm))
                host_vars.update(vgpu_factors(args, self.policy))
            if args.mode == "bitfusion":
                host_vars["bitfusion_server"] = args.bitfusion_server
            if args.mode == "passthrough":
                host_vars["gpus"] = args.gpus_per_vm
            self.hosts.append(
                Host(
                    name=name,
                    address=vm.default_ip_address,
                    ssh_user=args.ssh_user,
                    groups=host_groups(args, f"vsphere_{args.mode}"),
                    gpu_path=vm_gpu_path,
                    vars=host_vars,
                )
            )
        self.kw_vms = []
        for i in range(args.kw_vm_count):
            name = f"{args.lab}-kw-{i}"
            vm = clone.vm(
                name,
                args.kw_vm_cpus,
                args.kw_vm_memory_mb,
                f"gpulab lab={args.lab} topology={args.topology} role=knowledge-worker",
                {"firmware": template.firmware},
                after,
            )
            self.kw_vms.append(vm)
            # CPU-only: no GPU group, gpu_path none; site.yml's knowledge_workers play loads it.
            self.hosts.append(
                Host(
                    name=name,
                    address=vm.default_ip_address,
                    ssh_user=args.ssh_user,
                    groups=[KW_GROUP],
                    gpu_path="none",
                    vars={"lab": args.lab, "kw_vms": args.kw_vm_count},
                )
            )
        if args.mode == "bitfusion":
            self.hosts.append(
                Host(
                    name=f"{args.lab}-bitfusion-server",
                    address=args.bitfusion_server,
                    ssh_user=args.ssh_user,
                    groups=["bitfusion_server"],
                    gpu_path="none",
                    vars={"lab": args.lab, "managed_by_gpulab": False},
                )
            )
        self.register_outputs({"hosts": [h.to_output() for h in self.hosts]})

    @staticmethod
    def _gpu_args(args: VsphereGpuArgs, index: int, template: Any, gpu_host: Any) -> dict[str, Any]:
        if args.mode == "passthrough":
            assert args.gpus_per_vm and gpu_host is not None
            ids = args.pci_device_ids[index * args.gpus_per_vm : (index + 1) * args.gpus_per_vm]
            return {
                "pci_device_ids": list(ids),
                "host_system_id": gpu_host.id,
                "memory_reservation": args.vm_memory_mb,
                "memory_reservation_locked_to_max": True,
                "firmware": "efi",
                "extra_config": passthrough_extra_config(args),
            }
        if args.mode == "vgpu":
            # NVIDIA vGPU needs all guest memory reserved.
            return {
                "memory_reservation": args.vm_memory_mb,
                "memory_reservation_locked_to_max": True,
                "firmware": template.firmware,
            }
        return {"firmware": template.firmware}

    def _vgpu_policy(self, args: VsphereGpuArgs) -> Any:
        assert args.cluster and args.vsphere_server and args.vsphere_user and args.vgpu_policy
        return VgpuPolicy(
            f"{args.lab}-vgpu-policy",
            cluster=args.cluster,
            policy=args.vgpu_policy,
            profile=args.vgpu_profile,
            apply=args.vgpu_policy_apply,
            timeout_s=args.vgpu_policy_timeout_s,
            # `gpulab measure` changes gpulab:measure_id (validated with the stack's config):
            # the policy is read from the hosts again before every measurement
            check_id=pulumi.Config("gpulab").get("measure_id") or "",
            server=args.vsphere_server,
            user=args.vsphere_user,
            password=args.vsphere_password,
            insecure=args.vsphere_insecure,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _attach_vgpu(self, args: VsphereGpuArgs, name: str, vm: vsphere.VirtualMachine) -> Any:
        # infra.config requires these for mode vgpu.
        assert args.vgpu_profile is not None and args.vsphere_server is not None
        assert args.vsphere_user is not None
        return VgpuProfile(
            f"{name}-vgpu",
            vm_uuid=vm.uuid,
            vm_name=vm.name,
            profile=args.vgpu_profile,
            server=args.vsphere_server,
            user=args.vsphere_user,
            password=args.vsphere_password,
            insecure=args.vsphere_insecure,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[vm]),
        )


def build(args: VsphereGpuArgs) -> tuple[pulumi.ComponentResource, list[Host]]:
    lab = VsphereGpuLab(args)
    return lab, lab.hosts
