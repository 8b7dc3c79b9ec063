package naming_test

import (
	"fmt"

	"github.com/replicakit/replicakit/naming"
)

// Each place a replica name goes has its own rules: a name with an
// uppercase letter and '_' is a fine vSphere VM name and label value, but
// not a Kubernetes object name, and Portable, the strictest, refuses it too.
func ExampleTarget() {
	for _, t := range []naming.Target{naming.Portable, naming.ObjectName, naming.LabelValue, naming.VSphereName} {
		fmt.Printf("%s, at most %d: %v\n", t, t.MaxLen(), naming.Validate("Web_0", t) == nil)
	}
	// Output:
	// portable name (DNS-1123 label), at most 63: false
	// Kubernetes object name (DNS-1123 subdomain), at most 253: false
	// Kubernetes label value, at most 63: true
	// vSphere VM name, at most 80: true
}
