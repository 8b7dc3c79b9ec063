package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeEnv, when set, makes the test binary act as pkgsite, serving the
// fixtures in the directory it names; "fail" makes it exit at once.
const fakeEnv = "DOCSCHECK_FAKE_PKGSITE"

// busyEnv, when set, names a file: a fake pkgsite that finds it missing
// creates it and exits as pkgsite does when its port is taken.
const busyEnv = "DOCSCHECK_FAKE_BUSY"

func TestMain(m *testing.M) {
	if dir := os.Getenv(fakeEnv); dir != "" {
		fakePkgsite(dir)
		return
	}
	os.Exit(m.Run())
}

// fakePkgsite serves like pkgsite on -http: a home page, the license
// policy, and the library fixture as the page of example.com/m/shapes;
// every other path is not found.
func fakePkgsite(dir string) {
	if dir == "fail" {
		fmt.Fprintln(os.Stderr, "fake pkgsite: failing as asked")
		os.Exit(1)
	}
	fs := flag.NewFlagSet("pkgsite", flag.ExitOnError)
	addr := fs.String("http", "localhost:8080", "")
	fs.Bool("list", true, "")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if busy := os.Getenv(busyEnv); busy != "" {
		if _, err := os.Stat(busy); err != nil {
			_ = os.WriteFile(busy, nil, 0o600)
			fmt.Fprintf(os.Stderr, "listen tcp %s: bind: address already in use\n", *addr)
			os.Exit(1)
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return string(b)
	}
	pages := map[string]string{
		"/":                     "home",
		"/license-policy":       read("policy.html"),
		"/example.com/m/shapes": strings.ReplaceAll(read("library.html"), "example.com/lib", "example.com/m"),
	}
	err := http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, body)
	}))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// writeModule writes a module example.com/m with a library package and a
// command into a temporary directory and returns it.
func writeModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":           "module example.com/m\n\ngo 1.26.0\n",
		"shapes/shapes.go": "// Package shapes measures shapes.\npackage shapes\n\n// Area returns 1.\nfunc Area() float64 { return 1 }\n",
		"cmd/tool/main.go": "// Command tool does nothing.\npackage main\n\nfunc main() {}\n",
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRun: run lists the module's packages, starts pkgsite (here the fake),
// checks every page and reports each problem under its package: the
// library's page passes, the command is not served.
func TestRun(t *testing.T) {
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeEnv, testdata)
	cfg := config{pkgsite: os.Args[0], dirs: []string{writeModule(t)}, license: "Apache-2.0", startTimeout: time.Minute}
	var out, logw strings.Builder
	ok, err := run(cfg, &out, &logw)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, logw.String())
	}
	if ok {
		t.Errorf("run reported no problems; output:\n%s", out.String())
	}
	want := "  example.com/m/cmd/tool: not served: pkgsite answered 404\n"
	if !strings.HasSuffix(out.String(), want) || strings.Count(out.String(), "\n  ") != 1 {
		t.Errorf("run's output does not end with the one problem %q:\n%s", want, out.String())
	}
}

// TestRunPortTaken: a pkgsite that finds its port taken, as another
// process can take it between the check finding it free and pkgsite
// binding it, is started again on another.
func TestRunPortTaken(t *testing.T) {
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeEnv, testdata)
	busy := filepath.Join(t.TempDir(), "busy")
	t.Setenv(busyEnv, busy)
	cfg := config{pkgsite: os.Args[0], dirs: []string{writeModule(t)}, license: "Apache-2.0", startTimeout: time.Minute}
	var out, logw strings.Builder
	if _, err := run(cfg, &out, &logw); err != nil {
		t.Fatalf("run: %v\n%s", err, logw.String())
	}
	if _, err := os.Stat(busy); err != nil {
		t.Errorf("the first pkgsite did not find its port taken: %v", err)
	}
}

// TestRunPkgsiteFails: a pkgsite that exits before serving is an error
// that carries its output.
func TestRunPkgsiteFails(t *testing.T) {
	t.Setenv(fakeEnv, "fail")
	cfg := config{pkgsite: os.Args[0], dirs: []string{writeModule(t)}, license: "Apache-2.0", startTimeout: time.Minute}
	var out, logw strings.Builder
	_, err := run(cfg, &out, &logw)
	if err == nil || !strings.Contains(err.Error(), "exited before serving") || !strings.Contains(err.Error(), "failing as asked") {
		t.Errorf("run: got error %v, want one saying pkgsite exited before serving, with its output", err)
	}
}
