package replicakit_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestImportersInheritNoOperatorDependencies keeps what the example
// operator needs (k8s.io/apiserver, behind its authenticated metrics) out
// of the library's module: importers of the library's packages build
// against this go.mod, and the operator has a module of its own.
func TestImportersInheritNoOperatorDependencies(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(mod)) {
		if strings.HasPrefix(strings.TrimSpace(line), "k8s.io/apiserver ") {
			t.Errorf("go.mod requires k8s.io/apiserver: %s", strings.TrimSpace(line))
		}
	}
	out, err := exec.Command("go", "list", "-deps", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for pkg := range strings.Lines(string(out)) {
		pkg = strings.TrimSpace(pkg)
		if strings.HasPrefix(pkg, "k8s.io/apiserver/") || strings.HasPrefix(pkg, "github.com/replicakit/replicakit/examples") {
			t.Errorf("the library's packages depend on %s", pkg)
		}
	}
}
