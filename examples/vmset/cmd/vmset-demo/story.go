package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// story is the seed's kubectl session, checked on both sides.
type story struct {
	env    *testenv.Env
	vc     vsphere.Config
	west   vsphere.Config // the second vCenter
	ns     string
	sample string
	dead   <-chan struct{} // closed if the manager exits
	set    string          // the set the current step plays with
}

const setName = "test-rs"

func (s *story) play(ctx context.Context) error {
	s.set = setName
	fmt.Println("# Create a VirtualMachineReplicaSet of 3")
	if _, err := s.kubectl(ctx, "create", "namespace", s.ns); err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, "apply", "-n", s.ns, "-f", s.sample); err != nil {
		return err
	}
	if _, err := s.settle(ctx, 3); err != nil {
		return err
	}
	fmt.Println("\n# Get the set: all replicas ready")
	if err := s.getSet(ctx, 3, false); err != nil {
		return err
	}

	fmt.Println("\n# Scale down to 1")
	if _, err := s.kubectl(ctx, "scale", "vmreplicaset", "-n", s.ns, setName, "--replicas=1"); err != nil {
		return err
	}
	one, err := s.settle(ctx, 1)
	if err != nil {
		return err
	}
	survivor := one.Live[0]
	if err := s.getSet(ctx, 1, true); err != nil {
		return err
	}
	if err := s.getVMs(ctx, one.Live); err != nil {
		return err
	}

	fmt.Println("\n# Scale up to 2: the survivor stays")
	if _, err := s.kubectl(ctx, "scale", "vmreplicaset", "-n", s.ns, setName, "--replicas=2"); err != nil {
		return err
	}
	two, err := s.settle(ctx, 2)
	if err != nil {
		return err
	}
	if !slices.Contains(two.Live, survivor) {
		return fmt.Errorf("scaling 1→2 replaced the survivor %s: now %v", survivor, two.Live)
	}
	if err := s.getSet(ctx, 2, true); err != nil {
		return err
	}
	if err := s.getVMs(ctx, two.Live); err != nil {
		return err
	}

	fmt.Println("\n# Delete the set: the garbage collector removes its VMs, and the operator their vSphere VMs")
	if err := s.deleteSet(ctx, setName); err != nil {
		return err
	}
	if err := s.getVMs(ctx, nil); err != nil {
		return err
	}
	return s.playGuests(ctx)
}

// deleteSet deletes the set called name with kubectl and waits until
// neither Kubernetes nor vCenter holds anything of the namespace's.
func (s *story) deleteSet(ctx context.Context, name string) error {
	if _, err := s.kubectl(ctx, "delete", "vmreplicaset", "-n", s.ns, name); err != nil {
		return err
	}
	_, err := s.await(ctx, "no VirtualMachine and no vSphere VM left", func(st vmcheck.State) bool {
		return st.Set == nil && len(st.Want) == 0 && len(st.VCenter) == 0
	})
	return err
}

// kubectl runs the real kubectl, printing the command and what it said.
func (s *story) kubectl(ctx context.Context, args ...string) (string, error) {
	fmt.Printf("$ kubectl %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, filepath.Join(s.env.BinDir, "kubectl"), append([]string{"--kubeconfig=" + s.env.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	fmt.Print(string(out))
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// settle waits until n VMs are ready on both sides and the set says so,
// and prints what vCenter holds.
func (s *story) settle(ctx context.Context, n int) (vmcheck.State, error) {
	return s.await(ctx, fmt.Sprintf("%d VirtualMachines powered on, the same %d VMs in vCenter, the set reporting %d ready", n, n, n),
		func(st vmcheck.State) bool { return st.Settled(n) })
}

// await polls both sides until ok holds, for up to two minutes.
func (s *story) await(ctx context.Context, what string, ok func(vmcheck.State) bool) (vmcheck.State, error) {
	var st vmcheck.State
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-s.dead:
			return false, fmt.Errorf("vmset-manager exited")
		default:
		}
		st, last = vmcheck.ObserveAll(ctx, s.env.Client, []vsphere.Config{s.vc, s.west}, s.ns, s.set)
		return last == nil && ok(st), nil
	})
	if err != nil {
		return st, fmt.Errorf("waiting for %s: %w (last read error %v); %v", what, err, last, st) //nolint:errorlint // last is often nil, which %w would print as %!w(<nil>); err is the cause
	}
	fmt.Printf("  ✓ checked: %s; vCenter holds %v\n", what, st.VCenter)
	return st, nil
}

// getSet shows the set with kubectl and checks its REPLICAS and READY.
func (s *story) getSet(ctx context.Context, n int, wide bool) error {
	args := []string{"get", "vmreplicaset", "-n", s.ns, s.set}
	if wide {
		args = append(args, "-o", "wide")
	}
	out, err := s.kubectl(ctx, args...)
	if err != nil {
		return err
	}
	rows := table(out)
	want := map[string]string{"NAME": s.set, "REPLICAS": fmt.Sprint(n), "READY": fmt.Sprint(n)}
	if len(rows) != 1 {
		return fmt.Errorf("kubectl get vmreplicaset printed %d rows, want 1", len(rows))
	}
	for col, v := range want {
		if rows[0][col] != v {
			return fmt.Errorf("kubectl get vmreplicaset: %s is %q, want %q", col, rows[0][col], v)
		}
	}
	return nil
}

// getVMs shows the VMs with kubectl and checks they are exactly names, all
// PoweredOn.
func (s *story) getVMs(ctx context.Context, names []string) error {
	out, err := s.kubectl(ctx, "get", "vm", "-n", s.ns)
	if err != nil {
		return err
	}
	rows := table(out)
	var got []string
	for _, r := range rows {
		if r["POWER-STATE"] != "PoweredOn" {
			return fmt.Errorf("kubectl get vm: %s is %q, want PoweredOn", r["NAME"], r["POWER-STATE"])
		}
		got = append(got, r["NAME"])
	}
	slices.Sort(got)
	if !slices.Equal(got, names) {
		return fmt.Errorf("kubectl get vm shows %v, want %v", got, names)
	}
	if len(names) == 0 && !strings.Contains(out, "No resources found") {
		return fmt.Errorf("kubectl get vm: %q, want No resources found", out)
	}
	return nil
}

// table parses kubectl's columns into one map per row, keyed by header.
// A column's values start where its header starts (kubectl aligns them so),
// and an empty value stays empty rather than shifting the next ones.
func table(out string) []map[string]string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "NAME") {
		return nil
	}
	var head []string
	var at []int // where each header starts
	for i, f := range strings.Fields(lines[0]) {
		from := 0
		if i > 0 {
			from = at[i-1] + len(head[i-1])
		}
		head, at = append(head, f), append(at, from+strings.Index(lines[0][from:], f))
	}
	var rows []map[string]string
	for _, l := range lines[1:] {
		row := map[string]string{}
		for i, h := range head {
			end := len(l)
			if i+1 < len(at) {
				end = min(at[i+1], len(l))
			}
			if at[i] < end {
				row[h] = strings.TrimSpace(l[at[i]:end])
			}
		}
		rows = append(rows, row)
	}
	return rows
}
