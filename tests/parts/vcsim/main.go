// vcsim for gpulab's tests: govmomi's vCenter simulator (Debian's golang-github-vmware-govmomi-dev
// ships the simulator packages but not vcsim's main) with GPU fixtures on every HostSystem:
// an NVIDIA PCI device (vendor 0x10de), its passthrough entry and the vGPU (grid_*) profiles the
// host supports; and, from esx_host.go (compiled into the simulator package), the ESXi behaviour
// vcsim 0.24 lacks: a kernel module system on every host (the NVIDIA vGPU manager's `nvidia`
// module on the GPU hosts) whose option changes take effect only when the host reboots, host
// reboots that need maintenance mode, and maintenance mode that waits for powered-on VMs to go.
// Built by scripts/parts/vcsim.sh; started by tests/parts/fixtures_vcsim.py.
//
// It listens on -listen (default 127.0.0.1:0, a free port), prints its SDK URL (without
// credentials) on stdout and writes it to -url-file, then serves until SIGTERM/SIGINT.
// A rebooting host is away for -reboot-seconds. GET /gpulab/esx (basic auth, the same user)
// shows each host as its shell would: the modules' configured and loaded option strings, boot
// time, connection state, maintenance mode; POST /gpulab/esx {"host": NAME, "hang_reboot": true}
// makes that host's next reboot never come back. Neither is part of the vSphere API.
package main

import (
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io/ioutil"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

const nvidiaVendor = 0x10de

// gpuModel is what one simulated host carries.
type gpuModel struct {
	deviceID   int16
	deviceName string
	profiles   []string
	enabled    bool // passthrough enabled (capable is always true)
}

// Cluster hosts carry a Tesla P100 with passthrough enabled; the standalone host a Tesla T4
// that is passthrough capable but not enabled, so the tests see both answers.
var (
	p100 = gpuModel{0x15f8, "GP100GL [Tesla P100 PCIe 16GB]",
		[]string{"grid_p100-1q", "grid_p100-2q", "grid_p100-4q", "grid_p100-8q", "grid_p100-16q"}, true}
	t4 = gpuModel{0x1eb8, "TU104GL [Tesla T4]",
		[]string{"grid_t4-1q", "grid_t4-2q", "grid_t4-4q", "grid_t4-8q", "grid_t4-16q"}, false}
)

func addGPU(host *simulator.HostSystem, gpu gpuModel) {
	id := "0000:3b:00.0"
	host.Hardware.PciDevice = append(host.Hardware.PciDevice, types.HostPciDevice{
		Id:          id,
		ClassId:     0x0302, // 3D controller
		Bus:         0x3b,
		VendorId:    nvidiaVendor,
		SubVendorId: nvidiaVendor,
		VendorName:  "NVIDIA Corporation",
		DeviceId:    gpu.deviceID,
		DeviceName:  gpu.deviceName,
	})
	host.Config.PciPassthruInfo = append(host.Config.PciPassthruInfo, &types.HostPciPassthruInfo{
		Id:              id,
		DependentDevice: id,
		PassthruCapable: true,
		PassthruEnabled: gpu.enabled,
		PassthruActive:  gpu.enabled,
	})
	host.Config.SharedPassthruGpuTypes = append([]string(nil), gpu.profiles...)
}

// esxHandler serves GET/POST /gpulab/esx (see the file comment) to the one user.
func esxHandler(user, password string) http.HandlerFunc {
	same := func(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
	return func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || !same(u, user) || !same(p, password) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(simulator.EsxStatus())
		case http.MethodPost:
			var req struct {
				Host       string `json:"host"`
				HangReboot bool   `json:"hang_reboot"`
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if err := simulator.SetRebootHang(req.Host, req.HangReboot); err != nil {
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
		}
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (port 0: a free port)")
	urlFile := flag.String("url-file", "", "write the SDK URL (without credentials) to this file")
	username := flag.String("username", "gpulab", "the one user that may log in")
	password := flag.String("password", "", "its password (default: from VCSIM_PASSWORD)")
	plain := flag.Bool("http", false, "serve plain HTTP instead of HTTPS")
	reboot := flag.Float64("reboot-seconds", 2, "how long a rebooting host does not respond")
	flag.Parse()
	if *password == "" {
		*password = os.Getenv("VCSIM_PASSWORD")
	}
	if *password == "" {
		log.Fatal("vcsim: error: no password (set -password or VCSIM_PASSWORD)")
	}

	model := simulator.VPX()
	if err := model.Create(); err != nil {
		log.Fatalf("vcsim: error: model: %v", err)
	}
	defer model.Remove()
	simulator.RebootDelay = time.Duration(*reboot * float64(time.Second))

	hosts := 0
	for _, e := range simulator.Map.All("HostSystem") {
		host := e.(*simulator.HostSystem)
		gpu := p100
		if host.Parent != nil && host.Parent.Type == "ComputeResource" {
			gpu = t4 // the standalone host
		}
		addGPU(host, gpu)
		// the NVIDIA vGPU manager's module, with no options: best effort scheduling
		simulator.AddKernelModuleSystem(host, map[string]string{"nvidia": ""})
		hosts++
	}

	if !*plain {
		model.Service.TLS = new(tls.Config)
	}
	model.Service.Listen = &url.URL{Host: *listen, User: url.UserPassword(*username, *password)}
	model.Service.HandleFunc("/gpulab/esx", esxHandler(*username, *password))
	server := model.Service.NewServer()
	defer server.Close()

	u := *server.URL
	u.User = nil
	// defaultIP() would pick a non-loopback address for 0.0.0.0; we only ever bind loopback.
	u.Host = strings.Replace(u.Host, "0.0.0.0", "127.0.0.1", 1)
	fmt.Printf("%s\n", u.String())
	if *urlFile != "" {
		tmp := *urlFile + ".tmp"
		if err := ioutil.WriteFile(tmp, []byte(u.String()+"\n"), 0o600); err != nil {
			log.Fatalf("vcsim: error: %v", err)
		}
		if err := os.Rename(tmp, *urlFile); err != nil {
			log.Fatalf("vcsim: error: %v", err)
		}
	}
	log.Printf("vcsim: serving %d hosts with GPU fixtures", hosts)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
