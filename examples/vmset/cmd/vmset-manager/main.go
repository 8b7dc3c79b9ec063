package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	ctx := ctrl.SetupSignalHandler()
	err := run(ctx, os.Args[1:], os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "vmset-manager:", err)
		os.Exit(1)
	}
}

// run parses args and runs the manager until ctx ends.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	opts, err := parse(args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	return serve(ctx, opts, stderr)
}
