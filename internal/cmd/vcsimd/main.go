package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vmware/govmomi/simulator"

	"github.com/replicakit/replicakit/internal/vcsim"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "vcsimd:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("vcsimd", flag.ContinueOnError)
	dir := fs.String("dir", "", "folder to write vsphere.env, password, ca.pem, govc.env, control and vcenter/ (a vmset-manager -vcenter directory) into (required)")
	methods := fs.String("fault-methods", "CloneVM_Task,PowerOnVM_Task,Destroy_Task,ReconfigVM_Task", "SOAP methods that may fail, comma-separated")
	rate := fs.Float64("fault-rate", 0, "probability that a call of -fault-methods fails (0: none)")
	delay := fs.Duration("task-delay", 0, "how long each clone, power-on and destroy call takes (0: as the simulator serves it)")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the faults' random source")
	username := fs.String("username", vcsim.Username, "the user name the simulator accepts")
	password := fs.String("password", vcsim.Password, "the password it accepts")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() > 0 {
		return errors.New("usage: vcsimd -dir DIR [-username U -password P] [-fault-rate P] [-fault-methods M,...] [-seed N] [-task-delay D]")
	}
	if *rate < 0 || *rate > 1 {
		return fmt.Errorf("-fault-rate %v: want a probability in [0, 1]", *rate)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	faults := &vcsim.Faults{Methods: strings.Split(*methods, ","), Seed: *seed}
	slow := func(m *simulator.Model) {
		ms := int(delay.Milliseconds())
		m.DelayConfig.MethodDelay = map[string]int{"CloneVM_Task": ms, "PowerOnVM_Task": ms, "Destroy_Task": ms}
	}
	sim, err := vcsim.New(faults.Serialized, slow, vcsim.Hotplug, vcsim.Credentials(*username, *password))
	if err != nil {
		return err
	}
	defer sim.Close()
	if err := sim.AddCluster(ctx, vcsim.ThirdCluster); err != nil {
		return err
	}
	faults.SetProbability(*rate)

	control, err := serveControl(ctx, sim, faults)
	if err != nil {
		return err
	}
	defer func() { _ = control.Close() }()
	if err := writeFiles(*dir, sim, "http://"+control.Addr); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "vcsimd: serving %s (control http://%s), settings in %s\n", sim.URL, control.Addr, *dir)
	<-ctx.Done()
	return nil
}

// serveControl serves the control endpoint on a free loopback port.
func serveControl(ctx context.Context, sim *vcsim.Sim, faults *vcsim.Faults) (*http.Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	lifts := map[string]func(){}
	mux := http.NewServeMux()
	refusal := func(w http.ResponseWriter, r *http.Request) (key, method, pool string, ok bool) {
		method, pool = r.URL.Query().Get("method"), r.URL.Query().Get("pool")
		if method == "" || pool == "" {
			http.Error(w, "want method and pool", http.StatusBadRequest)
			return "", "", "", false
		}
		return method + " " + pool, method, pool, true
	}
	mux.HandleFunc("PUT /refuse", func(w http.ResponseWriter, r *http.Request) {
		key, method, pool, ok := refusal(w, r)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if lifts[key] != nil {
			return
		}
		ref, err := sim.ResourcePool(ctx, pool)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		lifts[key] = faults.Refuse(method, ref)
	})
	mux.HandleFunc("DELETE /refuse", func(w http.ResponseWriter, r *http.Request) {
		key, _, _, ok := refusal(w, r)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if lift := lifts[key]; lift != nil {
			lift()
			delete(lifts, key)
		}
	})
	mux.HandleFunc("PUT /faults", func(w http.ResponseWriter, r *http.Request) {
		p, err := strconv.ParseFloat(r.URL.Query().Get("rate"), 64)
		if err != nil || p < 0 || p > 1 {
			http.Error(w, "rate: want a probability in [0, 1]", http.StatusBadRequest)
			return
		}
		faults.SetProbability(p)
	})
	mux.HandleFunc("GET /calls", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(struct {
			Calls    map[string]int64 `json:"calls"`
			Injected int64            `json:"injected"`
		}{faults.Calls(), faults.Injected()})
	})
	srv := &http.Server{Addr: l.Addr().String(), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return srv, nil
}

// writeFiles writes the settings into dir, vsphere.env last.
func writeFiles(dir string, sim *vcsim.Sim, control string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	c := sim.Config()
	files := map[string]string{
		"password": c.Password + "\n",
		"ca.pem":   string(sim.CA),
		"control":  control + "\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			return err
		}
	}
	if err := sim.WriteEnvFile(filepath.Join(dir, "govc.env")); err != nil {
		return err
	}
	if err := sim.WriteVCenterDir(filepath.Join(dir, "vcenter")); err != nil {
		return err
	}
	zones := vcsim.Zones()
	var z []string
	for _, name := range slices.Sorted(maps.Keys(zones)) {
		z = append(z, name+":resourcePool="+zones[name].ResourcePool)
	}
	env := strings.Join([]string{
		"VSPHERE_URL=" + c.URL,
		"VSPHERE_USERNAME=" + c.Username,
		"VSPHERE_PASSWORD_FILE=" + filepath.Join(dir, "password"),
		"VSPHERE_CA_FILE=" + filepath.Join(dir, "ca.pem"),
		"VSPHERE_DATACENTER=" + c.Datacenter,
		"VSPHERE_FOLDER=" + c.Folder,
		"VSPHERE_RESOURCE_POOL=" + c.ResourcePool,
		"VSPHERE_DATASTORE=" + c.Datastore,
		"VSPHERE_TEMPLATE=" + c.Template,
		"VSPHERE_ZONES=" + strings.Join(z, ";"),
	}, "\n") + "\n"
	tmp := filepath.Join(dir, "vsphere.env.tmp")
	if err := os.WriteFile(tmp, []byte(env), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "vsphere.env"))
}
