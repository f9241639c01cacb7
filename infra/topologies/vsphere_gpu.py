"""``vsphere-gpu``: VMs cloned from a template with guest customization, reaching GPUs by

- ``passthrough``: DirectPath I/O devices pinned to ``gpu_host``, full locked memory
  reservation, EFI, 64-bit MMIO sized to the GPUs' BARs;
- ``vgpu``: an NVIDIA vGPU profile attached by :class:`infra.dynamic.vgpu.VgpuProfile`
  (the provider has no vGPU argument), full locked memory reservation;
- ``bitfusion``: plain client VMs; the Bitfusion server is recorded as a host.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_vsphere as vsphere

from infra.config import LabConfig
from infra.hosts import Host
from infra.topologies.common import TYPE_PREFIX, gpu_path, host_groups


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


def passthrough_extra_config(cfg: LabConfig) -> dict[str, str]:
    assert cfg.gpus_per_vm and cfg.gpu_bar_gb
    return {
        "pciPassthru.use64bitMMIO": "TRUE",
        "pciPassthru.64bitMMIOSizeGB": str(mmio_size_gb(cfg.gpus_per_vm, cfg.gpu_bar_gb)),
    }


KW_GROUP = "knowledge_workers"


def sharing_detail(cfg: LabConfig) -> str:
    """The records' sharing of a vGPU arm: ``vgpu:<profile>[.<policy>][.kw<N>]``
    (workloads/setting.py allows letters, digits, '.', '_' and '-' in the detail)."""
    parts = [str(cfg.vgpu_profile)]
    if cfg.vgpu_policy:
        parts.append(cfg.vgpu_policy)
    if cfg.kw_vm_count:
        parts.append(f"kw{cfg.kw_vm_count}")
    return "vgpu:" + ".".join(parts)


def vgpu_factors(cfg: LabConfig) -> dict[str, Any]:
    """Host vars of a vGPU VM: the arm's factors, as the hosts output and the records carry
    them (``workload_run_sharing`` becomes the records' sharing)."""
    from infra.clouds.vgpu_policy import esxcli_command

    out: dict[str, Any] = {
        "vgpu_profile": cfg.vgpu_profile,
        "vgpu_vms_per_gpu": cfg.vgpu_vms_per_gpu,
        "vgpu_policy": cfg.vgpu_policy,
        "vgpu_policy_command": esxcli_command(cfg.vgpu_policy) if cfg.vgpu_policy else None,
        "kw_vms": cfg.kw_vm_count,
        "workload_run_sharing": sharing_detail(cfg),
    }
    return {k: v for k, v in out.items() if v is not None}


class _Cloner:
    """Clones of the template with Linux guest customization, named ``name``."""

    def __init__(
        self,
        cfg: LabConfig,
        parent: pulumi.ComponentResource,
        cluster: Any,
        datastore: Any,
        network: Any,
        template: Any,
    ) -> None:
        self.cfg, self.parent, self.provider = cfg, parent, getattr(parent, "provider", None)
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
    ) -> vsphere.VirtualMachine:
        cfg, template = self.cfg, self.template
        domain = cfg.domain
        assert domain is not None  # infra.config defaults it (gpulab.local)
        return vsphere.VirtualMachine(
            name,
            name=name,
            resource_pool_id=self.cluster.resource_pool_id,
            datastore_id=self.datastore.id,
            folder=cfg.folder,
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
                parent=self.parent, provider=self.provider, delete_before_replace=True
            ),
        )


class VsphereGpuLab(pulumi.ComponentResource):
    hosts: list[Host]

    def __init__(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TYPE_PREFIX}:VsphereGpuLab", cfg.lab, None, opts)
        self.provider = vsphere.Provider(
            f"{cfg.lab}-vsphere",
            vsphere_server=cfg.vsphere_server,
            user=cfg.vsphere_user,
            password=cfg.vsphere_password,
            allow_unverified_ssl=cfg.vsphere_insecure,
            opts=pulumi.ResourceOptions(parent=self),
        )
        invoke = pulumi.InvokeOptions(parent=self, provider=self.provider)
        dc = vsphere.get_datacenter_output(name=cfg.datacenter, opts=invoke)
        cluster = vsphere.get_compute_cluster_output(
            name=cfg.cluster, datacenter_id=dc.id, opts=invoke
        )
        datastore = vsphere.get_datastore_output(
            name=cfg.datastore, datacenter_id=dc.id, opts=invoke
        )
        network = vsphere.get_network_output(name=cfg.network, datacenter_id=dc.id, opts=invoke)
        template = vsphere.get_virtual_machine_output(
            name=cfg.template, datacenter_id=dc.id, opts=invoke
        )
        gpu_host = (
            vsphere.get_host_output(name=cfg.gpu_host, datacenter_id=dc.id, opts=invoke)
            if cfg.mode == "passthrough"
            else None
        )
        self.vms: list[vsphere.VirtualMachine] = []
        self.vgpus: list[Any] = []
        self.hosts = []
        vm_gpu_path = gpu_path(cfg)
        clone = _Cloner(cfg, self, cluster, datastore, network, template)
        for i in range(cfg.host_count or 1):
            name = f"{cfg.lab}-gpu-{i}"
            vm = clone.vm(
                name,
                cfg.vm_cpus,
                cfg.vm_memory_mb,
                f"gpulab lab={cfg.lab} topology={cfg.topology} mode={cfg.mode}",
                self._gpu_args(cfg, i, template, gpu_host),
            )
            self.vms.append(vm)
            host_vars: dict[str, Any] = {"lab": cfg.lab, "vsphere_mode": cfg.mode}
            if cfg.mode == "vgpu":
                self.vgpus.append(self._attach_vgpu(cfg, name, vm))
                host_vars.update(vgpu_factors(cfg))
            if cfg.mode == "bitfusion":
                host_vars["bitfusion_server"] = cfg.bitfusion_server
            if cfg.mode == "passthrough":
                host_vars["gpus"] = cfg.gpus_per_vm
            self.hosts.append(
                Host(
                    name=name,
                    address=vm.default_ip_address,
                    ssh_user=cfg.ssh_user,
                    groups=host_groups(cfg, f"vsphere_{cfg.mode}"),
                    gpu_path=vm_gpu_path,
                    vars=host_vars,
                    identity=vm.uuid,
                )
            )
        self.policy = self._vgpu_policy(cfg) if cfg.mode == "vgpu" and cfg.vgpu_policy else None
        self.kw_vms = []
        for i in range(cfg.kw_vm_count):
            name = f"{cfg.lab}-kw-{i}"
            vm = clone.vm(
                name,
                cfg.kw_vm_cpus,
                cfg.kw_vm_memory_mb,
                f"gpulab lab={cfg.lab} topology={cfg.topology} role=knowledge-worker",
                {"firmware": template.firmware},
            )
            self.kw_vms.append(vm)
            # CPU-only: no GPU group, gpu_path none; site.yml's knowledge_workers play loads it.
            self.hosts.append(
                Host(
                    name=name,
                    address=vm.default_ip_address,
                    ssh_user=cfg.ssh_user,
                    groups=[KW_GROUP],
                    gpu_path="none",
                    vars={"lab": cfg.lab, "kw_vms": cfg.kw_vm_count},
                    identity=vm.uuid,
                )
            )
        if cfg.mode == "bitfusion":
            self.hosts.append(
                Host(
                    name=f"{cfg.lab}-bitfusion-server",
                    address=cfg.bitfusion_server,
                    ssh_user=cfg.ssh_user,
                    groups=["bitfusion_server"],
                    gpu_path="none",
                    vars={"lab": cfg.lab, "managed_by_gpulab": False},
                )
            )
        self.register_outputs({"hosts": [h.to_output() for h in self.hosts]})

    @staticmethod
    def _gpu_args(cfg: LabConfig, index: int, template: Any, gpu_host: Any) -> dict[str, Any]:
        if cfg.mode == "passthrough":
            assert cfg.gpus_per_vm and gpu_host is not None
            ids = cfg.pci_device_ids[index * cfg.gpus_per_vm : (index + 1) * cfg.gpus_per_vm]
            return {
                "pci_device_ids": list(ids),
                "host_system_id": gpu_host.id,
                "memory_reservation": cfg.vm_memory_mb,
                "memory_reservation_locked_to_max": True,
                "firmware": "efi",
                "extra_config": passthrough_extra_config(cfg),
            }
        if cfg.mode == "vgpu":
            # NVIDIA vGPU needs all guest memory reserved.
            return {
                "memory_reservation": cfg.vm_memory_mb,
                "memory_reservation_locked_to_max": True,
                "firmware": template.firmware,
            }
        return {"firmware": template.firmware}

    def _vgpu_policy(self, cfg: LabConfig) -> Any:
        from infra.dynamic.vgpu import VgpuPolicy

        assert cfg.cluster and cfg.vsphere_server and cfg.vsphere_user and cfg.vgpu_policy
        return VgpuPolicy(
            f"{cfg.lab}-vgpu-policy",
            cluster=cfg.cluster,
            policy=cfg.vgpu_policy,
            profile=cfg.vgpu_profile,
            apply=cfg.vgpu_policy_apply,
            server=cfg.vsphere_server,
            user=cfg.vsphere_user,
            password=cfg.vsphere_password,
            insecure=cfg.vsphere_insecure,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(self.vgpus)),
        )

    def _attach_vgpu(self, cfg: LabConfig, name: str, vm: vsphere.VirtualMachine) -> Any:
        from infra.dynamic.vgpu import VgpuProfile

        # infra.config requires these for mode vgpu.
        assert cfg.vgpu_profile is not None and cfg.vsphere_server is not None
        assert cfg.vsphere_user is not None
        return VgpuProfile(
            f"{name}-vgpu",
            vm_uuid=vm.uuid,
            vm_name=vm.name,
            profile=cfg.vgpu_profile,
            server=cfg.vsphere_server,
            user=cfg.vsphere_user,
            password=cfg.vsphere_password,
            insecure=cfg.vsphere_insecure,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[vm]),
        )


def build(cfg: LabConfig) -> tuple[pulumi.ComponentResource, list[Host]]:
    lab = VsphereGpuLab(cfg)
    return lab, lab.hosts
