// What an ESXi host does that govmomi 0.24's simulator does not: compiled INTO package simulator
// (scripts/parts/vcsim.sh builds with `go build -overlay`, adding this file to Debian's
// golang-github-vmware-govmomi-dev sources and replacing host_system.go with a copy that
// host_system.patch strips of the two maintenance-mode methods this file defines instead).
//
//   - HostKernelModuleSystem (QueryConfiguredModuleOptionString, UpdateModuleOptionString,
//     QueryModules): a module has the option string configured for its next load and the one
//     it was loaded with; an update changes only the configured one (as `esxcli system module
//     parameters set` does), the loaded one changes when the host boots. As on ESXi, the API
//     answers only the configured string (QueryModules' optionString is "not necessarily the
//     option string currently in use"); the loaded one is visible to tests through EsxStatus
//     (the host's shell, in effect), never through the SOAP API.
//   - RebootHost_Task: InvalidState unless the host is in maintenance mode (or force); the
//     host then does not respond (connectionState notResponding, its kernel module system
//     answers HostNotConnected) for RebootDelay, and comes back connected, still in maintenance
//     mode, with a new runtime.bootTime and every module loaded with its configured options.
//     SetRebootHang makes a host's next reboot never come back (a host that fails to boot).
//   - EnterMaintenanceMode_Task: returns the task at once; it completes when no powered-on VM
//     is left on the host (vCenter moves or powers off nothing by itself outside DRS), and
//     fails with Timedout after the request's timeout (seconds, > 0). ExitMaintenanceMode_Task
//     fails with HostNotConnected while the host is rebooting.
package simulator

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// RebootDelay is how long a rebooting host does not respond.
var RebootDelay = 2 * time.Second

type esxModule struct {
	configured string
	loaded     string
}

type esxState struct {
	host    *HostSystem
	modules map[string]*esxModule
	down    bool // rebooting: not responding
	hang    bool // the next reboot never comes back
}

var (
	esxMu    sync.Mutex
	esxHosts = map[types.ManagedObjectReference]*esxState{}
)

// esxOf is the host's state; the caller holds esxMu.
func esxOf(h *HostSystem) *esxState {
	st, ok := esxHosts[h.Self]
	if !ok {
		st = &esxState{host: h, modules: map[string]*esxModule{}}
		esxHosts[h.Self] = st
	}
	return st
}

// HostKernelModuleSystem is a host's kernel module configuration (see the file comment).
type HostKernelModuleSystem struct {
	mo.HostKernelModuleSystem

	Host *HostSystem
}

// AddKernelModuleSystem gives host its kernel module system with modules (name -> the option
// string configured and loaded at the host's current boot).
func AddKernelModuleSystem(host *HostSystem, modules map[string]string) {
	esxMu.Lock()
	st := esxOf(host)
	for name, options := range modules {
		st.modules[name] = &esxModule{configured: options, loaded: options}
	}
	esxMu.Unlock()
	kms := &HostKernelModuleSystem{Host: host}
	ref := Map.Put(kms).Reference()
	host.ConfigManager.KernelModuleSystem = &ref
}

func notConnected(host *HostSystem) *soap.Fault {
	return Fault(fmt.Sprintf("host %s is not responding", host.Name), &types.HostNotConnected{})
}

func (m *HostKernelModuleSystem) module(name string) (*esxModule, *soap.Fault) {
	st := esxOf(m.Host)
	if st.down {
		return nil, notConnected(m.Host)
	}
	mod, ok := st.modules[name]
	if !ok {
		return nil, Fault(fmt.Sprintf("kernel module %s not found", name), &types.NotFound{})
	}
	return mod, nil
}

func (m *HostKernelModuleSystem) QueryConfiguredModuleOptionString(
	req *types.QueryConfiguredModuleOptionString,
) soap.HasFault {
	body := &methods.QueryConfiguredModuleOptionStringBody{}
	esxMu.Lock()
	defer esxMu.Unlock()
	mod, fault := m.module(req.Name)
	if fault != nil {
		body.Fault_ = fault
		return body
	}
	body.Res = &types.QueryConfiguredModuleOptionStringResponse{Returnval: mod.configured}
	return body
}

func (m *HostKernelModuleSystem) UpdateModuleOptionString(
	req *types.UpdateModuleOptionString,
) soap.HasFault {
	body := &methods.UpdateModuleOptionStringBody{}
	esxMu.Lock()
	defer esxMu.Unlock()
	mod, fault := m.module(req.Name)
	if fault != nil {
		body.Fault_ = fault
		return body
	}
	mod.configured = req.Options // the loaded module keeps its options until the next boot
	body.Res = &types.UpdateModuleOptionStringResponse{}
	return body
}

func (m *HostKernelModuleSystem) QueryModules(req *types.QueryModules) soap.HasFault {
	body := &methods.QueryModulesBody{}
	esxMu.Lock()
	defer esxMu.Unlock()
	st := esxOf(m.Host)
	if st.down {
		body.Fault_ = notConnected(m.Host)
		return body
	}
	names := make([]string, 0, len(st.modules))
	for name := range st.modules {
		names = append(names, name)
	}
	sort.Strings(names)
	res := &types.QueryModulesResponse{}
	for i, name := range names {
		res.Returnval = append(res.Returnval, types.KernelModuleInfo{
			Id:           int32(i + 1),
			Name:         name,
			Filename:     name,
			OptionString: st.modules[name].configured, // configured, not what is in use
			Loaded:       true,
			Enabled:      true,
		})
	}
	body.Res = res
	return body
}

// RebootHostTask reboots the host (see the file comment).
func (h *HostSystem) RebootHostTask(req *types.RebootHost_Task) soap.HasFault {
	body := &methods.RebootHost_TaskBody{}
	esxMu.Lock()
	st := esxOf(h)
	down := st.down
	esxMu.Unlock()
	if down {
		body.Fault_ = notConnected(h)
		return body
	}
	if !req.Force && !h.Runtime.InMaintenanceMode {
		body.Fault_ = Fault("the host is not in maintenance mode", &types.InvalidState{})
		return body
	}
	task := CreateTask(h, "rebootHostTask", func(*Task) (types.AnyType, types.BaseMethodFault) {
		esxMu.Lock()
		st.down = true
		hang := st.hang
		st.hang = false
		esxMu.Unlock()
		h.Runtime.ConnectionState = types.HostSystemConnectionStateNotResponding
		h.Runtime.PowerState = types.HostSystemPowerStateUnknown
		if !hang {
			time.AfterFunc(RebootDelay, func() { esxBoot(h) })
		}
		return nil, nil
	})
	body.Res = &types.RebootHost_TaskResponse{Returnval: task.Run()}
	return body
}

func esxBoot(h *HostSystem) {
	Map.WithLock(h, func() {
		now := time.Now()
		esxMu.Lock()
		st := esxOf(h)
		for _, mod := range st.modules {
			mod.loaded = mod.configured
		}
		st.down = false
		esxMu.Unlock()
		h.Runtime.BootTime = &now
		h.Runtime.ConnectionState = types.HostSystemConnectionStateConnected
		h.Runtime.PowerState = types.HostSystemPowerStatePoweredOn
	})
}

func poweredOnVMs(h *HostSystem) int {
	var refs []types.ManagedObjectReference
	Map.WithLock(h, func() { refs = append(refs, h.Vm...) })
	n := 0
	for _, ref := range refs {
		vm, ok := Map.Get(ref).(*VirtualMachine)
		if !ok {
			continue
		}
		Map.WithLock(vm, func() {
			if vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn {
				n++
			}
		})
	}
	return n
}

// EnterMaintenanceModeTask waits for the host's powered-on VMs to be gone (see the file comment).
func (h *HostSystem) EnterMaintenanceModeTask(req *types.EnterMaintenanceMode_Task) soap.HasFault {
	timeout := time.Duration(req.Timeout) * time.Second
	task := CreateTask(h, "enterMaintenanceModeTask", func(*Task) (types.AnyType, types.BaseMethodFault) {
		deadline := time.Now().Add(timeout)
		for {
			if poweredOnVMs(h) == 0 {
				Map.WithLock(h, func() { h.Runtime.InMaintenanceMode = true })
				return nil, nil
			}
			if req.Timeout > 0 && time.Now().After(deadline) {
				return nil, &types.Timedout{}
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	go task.Run() // its info.name is the method's (EnterMaintenanceMode_Task), as vCenter's
	return &methods.EnterMaintenanceMode_TaskBody{
		Res: &types.EnterMaintenanceMode_TaskResponse{Returnval: task.Self},
	}
}

// ExitMaintenanceModeTask leaves maintenance mode (HostNotConnected while rebooting).
func (h *HostSystem) ExitMaintenanceModeTask(req *types.ExitMaintenanceMode_Task) soap.HasFault {
	task := CreateTask(h, "exitMaintenanceModeTask", func(*Task) (types.AnyType, types.BaseMethodFault) {
		esxMu.Lock()
		down := esxOf(h).down
		esxMu.Unlock()
		if down {
			return nil, &types.HostNotConnected{}
		}
		h.Runtime.InMaintenanceMode = false
		return nil, nil
	})
	return &methods.ExitMaintenanceMode_TaskBody{
		Res: &types.ExitMaintenanceMode_TaskResponse{Returnval: task.Run()},
	}
}

// EsxHostStatus is what a host's shell would show: its modules' configured and loaded options.
type EsxHostStatus struct {
	Name        string            `json:"name"`
	Configured  map[string]string `json:"configured"`
	Loaded      map[string]string `json:"loaded"`
	BootTime    string            `json:"boot_time"`
	Connection  string            `json:"connection_state"`
	Maintenance bool              `json:"in_maintenance_mode"`
	Rebooting   bool              `json:"rebooting"`
}

// EsxStatus reports every host that has a kernel module system.
func EsxStatus() []EsxHostStatus {
	esxMu.Lock()
	states := make([]*esxState, 0, len(esxHosts))
	for _, st := range esxHosts {
		states = append(states, st)
	}
	esxMu.Unlock()
	out := []EsxHostStatus{}
	for _, st := range states {
		h := st.host
		Map.WithLock(h, func() {
			s := EsxHostStatus{
				Name:        h.Name,
				Configured:  map[string]string{},
				Loaded:      map[string]string{},
				Connection:  string(h.Runtime.ConnectionState),
				Maintenance: h.Runtime.InMaintenanceMode,
			}
			if h.Runtime.BootTime != nil {
				s.BootTime = h.Runtime.BootTime.UTC().Format(time.RFC3339Nano)
			}
			esxMu.Lock()
			s.Rebooting = st.down
			for name, mod := range st.modules {
				s.Configured[name] = mod.configured
				s.Loaded[name] = mod.loaded
			}
			esxMu.Unlock()
			out = append(out, s)
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SetRebootHang makes the next reboot of the host named name never come back (hang) or not.
func SetRebootHang(name string, hang bool) error {
	esxMu.Lock()
	defer esxMu.Unlock()
	for _, st := range esxHosts {
		if st.host.Name == name {
			st.hang = hang
			return nil
		}
	}
	return fmt.Errorf("no host %q", name)
}
