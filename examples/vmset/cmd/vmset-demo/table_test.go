package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTable reads kubectl's columns by where their headers start, so that
// an empty column (a VM's IP or ZONE) leaves the next ones in place.
func TestTable(t *testing.T) {
	out := `NAME           POWER-STATE   READY   IP           ZONE   REVISION     AGE
web-rs-5lc2l   PoweredOn     True    10.20.0.10          q9lwczc9fb   5s
web-rs-7g5ff   PoweredOn     False                       4snkh2nfh7   2s
`
	want := []map[string]string{
		{"NAME": "web-rs-5lc2l", "POWER-STATE": "PoweredOn", "READY": "True", "IP": "10.20.0.10", "ZONE": "", "REVISION": "q9lwczc9fb", "AGE": "5s"},
		{"NAME": "web-rs-7g5ff", "POWER-STATE": "PoweredOn", "READY": "False", "IP": "", "ZONE": "", "REVISION": "4snkh2nfh7", "AGE": "2s"},
	}
	if diff := cmp.Diff(want, table(out)); diff != "" {
		t.Errorf("table(kubectl get vm) (-want +got):\n%s", diff)
	}
	if got := table("No resources found in demo namespace.\n"); got != nil {
		t.Errorf("table(No resources found) = %v, want nil", got)
	}
}
