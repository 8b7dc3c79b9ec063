package procs

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
)

// Binaries are the built programs.
type Binaries struct {
	// Manager is vmset-manager, VCenter vcsimd.
	Manager, VCenter string
}

// Build compiles vmset-manager and vcsimd into dir from the checkout that
// holds the examples module (the go command's build cache makes it cheap
// when nothing changed).
func Build(ctx context.Context, dir string) (Binaries, error) {
	b := Binaries{Manager: filepath.Join(dir, "vmset-manager"), VCenter: filepath.Join(dir, "vcsimd")}
	for out, pkg := range map[string]string{
		b.Manager: "github.com/replicakit/replicakit/examples/vmset/cmd/vmset-manager",
		b.VCenter: "github.com/replicakit/replicakit/internal/cmd/vcsimd",
	} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("go build %s: %w: %s", pkg, err, msg)
		}
	}
	return b, nil
}
