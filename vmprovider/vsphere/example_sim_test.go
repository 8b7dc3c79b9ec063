package vsphere_test

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestExamplesSimulator_EndsTasksBeforeAnswering: the simulator the
// examples run on answers a destroy only once the task that deletes the
// VM's files (held back here for a second) has ended, as the tests'
// simulator does. Examples run under the race detector too, which charges
// no test with what it finds there: on the simulator as govmomi serves
// it, that file delete ran on into the next destroy or clone and raced with
// it on the datastore, and "go test -race" failed now and then with "race
// detected outside of test execution".
func TestExamplesSimulator_EndsTasksBeforeAnswering(t *testing.T) {
	// The package's other tests run one at a time and their simulators
	// end every task before they answer, so no task reads the delays
	// while they change.
	simulator.TaskDelay.MethodDelay = map[string]int{"DeleteDatastoreFile": 1000}
	t.Cleanup(func() { simulator.TaskDelay.MethodDelay = nil })
	cfg, stop := vcsim("administrator@vsphere.local", "example-pw")
	t.Cleanup(stop)
	ctx := context.Background()
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(ctx) })
	owner := vmprovider.Owner{UID: "uid-web", Name: "default/web"}
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: owner}); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, "web-0", owner.UID); err != nil {
		t.Fatal(err)
	}

	c, logout, err := vsphere.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logout(ctx) })
	var tm mo.TaskManager
	pc := property.DefaultCollector(c)
	if err := pc.RetrieveOne(ctx, *c.ServiceContent.TaskManager, []string{"recentTask"}, &tm); err != nil {
		t.Fatal(err)
	}
	var tasks []mo.Task
	if err := pc.Retrieve(ctx, tm.RecentTask, []string{"info"}, &tasks); err != nil {
		t.Fatal(err)
	}
	states := map[string]types.TaskInfoState{}
	for _, tk := range tasks {
		states[tk.Info.Name] = tk.Info.State
	}
	if states["DeleteDatastoreFile"] == "" {
		t.Fatalf("no file delete among the recent tasks %v: the test exercises nothing", states)
	}
	for name, state := range states {
		if state != types.TaskInfoStateSuccess && state != types.TaskInfoStateError {
			t.Errorf("task %s is %q after the destroy was answered; want it ended", name, state)
		}
	}
}
