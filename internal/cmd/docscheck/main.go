package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	pkgsite := flag.String("pkgsite", "bin/pkgsite", "the `path` of the pkgsite binary (golang.org/x/pkgsite/cmd/pkgsite)")
	want := flag.String("license", "Apache-2.0", "the license `type` every package must be detected under")
	startTimeout := flag.Duration("start-timeout", 5*time.Minute, "how long to wait for pkgsite to serve")
	verbose := flag.Bool("v", false, "print every package's license, entry points and examples, and pkgsite's log")
	flag.Usage = func() {
		_, _ = fmt.Fprintf(flag.CommandLine.Output(), "usage: docscheck [flags] [MODULE_DIR ...]   (default: .)\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	cfg := config{pkgsite: *pkgsite, dirs: dirs, license: *want, startTimeout: *startTimeout, verbose: *verbose}
	ok, err := run(cfg, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "docscheck:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// config is what run needs.
type config struct {
	pkgsite      string
	dirs         []string // module directories
	license      string
	startTimeout time.Duration
	verbose      bool
}

// run lists the modules' packages, serves the modules with pkgsite, checks
// every package's pages and reports the problems on out. It returns false
// when there are problems, and an error when the check could not be done.
func run(cfg config, out, logw io.Writer) (ok bool, err error) {
	start := time.Now()
	w := &printer{w: out}
	var pkgs []pkg
	var absDirs []string
	for _, d := range cfg.dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return false, err
		}
		absDirs = append(absDirs, abs)
		ps, err := listPackages(abs)
		if err != nil {
			return false, err
		}
		pkgs = append(pkgs, ps...)
	}
	if len(pkgs) == 0 {
		return false, errors.New("no packages")
	}

	var modules []string
	for _, p := range pkgs {
		if !slices.Contains(modules, p.Module) {
			modules = append(modules, p.Module)
		}
	}
	srv, err := startPkgsite(cfg.pkgsite, absDirs, modules, cfg.startTimeout)
	if err != nil {
		return false, err
	}
	defer func() {
		if serr := srv.stop(); serr != nil && err == nil {
			err = serr
		}
		if cfg.verbose || err != nil {
			if _, lerr := fmt.Fprintf(logw, "pkgsite's log:\n%s", srv.log.String()); lerr != nil && err == nil {
				err = lerr
			}
		}
	}()
	w.printf("docscheck: pkgsite serving %s at %s after %s\n", count(len(absDirs), "module"), srv.base, time.Since(start).Round(100*time.Millisecond))

	client := &http.Client{Timeout: 3 * time.Minute}
	status, policy, err := get(client, srv.base+"/license-policy")
	if err != nil {
		return false, err
	}
	r := rules{License: cfg.license, Accepted: parsePolicy(policy)}
	if status != http.StatusOK || len(r.Accepted) == 0 {
		return false, fmt.Errorf("pkgsite's /license-policy (status %d) lists no accepted licenses", status)
	}
	var global []string
	if !slices.Contains(r.Accepted, cfg.license) {
		global = append(global, fmt.Sprintf("%s is not among the licenses pkg.go.dev accepts (%s)", cfg.license, srv.base+"/license-policy"))
	}

	results := make([]result, len(pkgs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, p := range pkgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = checkOne(client, srv.base, r, p)
		}()
	}
	wg.Wait()

	var problems []string
	problems = append(problems, global...)
	for _, res := range results {
		if res.err != nil {
			return false, res.err
		}
		for _, pr := range res.problems {
			problems = append(problems, res.pkg.ImportPath+": "+pr)
		}
		if cfg.verbose {
			w.printf("%s\n", res.summary())
		}
	}
	elapsed := time.Since(start).Round(100 * time.Millisecond)
	if len(problems) > 0 {
		w.printf("docscheck: %s in %s of %s (%s):\n", count(len(problems), "problem"), count(len(pkgs), "package"), count(len(absDirs), "module"), elapsed)
		for _, pr := range problems {
			w.printf("  %s\n", pr)
		}
		return false, w.err
	}
	w.printf("docscheck: ok: %s of %s, every page displays its documentation under %s, every importable package with an entry point has a runnable example (%s)\n",
		count(len(pkgs), "package"), count(len(absDirs), "module"), cfg.license, elapsed)
	return true, w.err
}

// printer writes to w until a write fails, and keeps that error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// result is the outcome of checking one package.
type result struct {
	pkg      pkg
	page     page
	problems []string
	err      error
}

// summary is the package's line in verbose output.
func (res result) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", res.pkg.ImportPath)
	lics := strings.Join(res.page.Licenses, ", ")
	if lics == "" {
		lics = noneDetected
	}
	fmt.Fprintf(&b, " license %s;", lics)
	runnable := 0
	for _, e := range res.page.Examples {
		if e.Runnable() {
			runnable++
		}
	}
	kind := ""
	switch {
	case res.pkg.command():
		kind = " (command)"
	case res.pkg.internal():
		kind = " (internal)"
	}
	fmt.Fprintf(&b, " %s, %s (%d runnable)%s", count(len(res.page.EntryPoints), "entry point"), count(len(res.page.Examples), "example"), runnable, kind)
	if u := uncovered(res.page); len(u) > 0 {
		fmt.Fprintf(&b, "; without an example of their own: %s", strings.Join(u, ", "))
	}
	return b.String()
}

// checkOne fetches and checks one package's main page.
func checkOne(client *http.Client, base string, r rules, p pkg) result {
	res := result{pkg: p}
	status, body, err := get(client, base+"/"+p.ImportPath)
	if err != nil {
		res.err = err
		return res
	}
	res.page = parsePage(body)
	res.problems = r.checkPackage(p, status, body)
	return res
}

// get fetches url and returns the status and body.
func get(client *http.Client, url string) (int, string, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, "", err
	}
	b, err := io.ReadAll(resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, "", fmt.Errorf("reading %s: %w", url, err)
	}
	return resp.StatusCode, string(b), nil
}

// listPackages returns the packages of the module in dir, each with the
// number of exported functions and methods go/doc finds in it.
func listPackages(dir string) ([]pkg, error) {
	modPath, err := goCmd(dir, "list", "-m", "-f", "{{.Path}}")
	if err != nil {
		return nil, err
	}
	modPath = strings.TrimSpace(modPath)
	list, err := goCmd(dir, "list", "-f", "{{.ImportPath}}\t{{.Name}}\t{{.Dir}}\t{{join .GoFiles \"\t\"}}", "./...")
	if err != nil {
		return nil, err
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 4 {
			return nil, fmt.Errorf("go list in %s: unexpected line %q", dir, line)
		}
		p := pkg{ImportPath: f[0], Name: f[1], Module: modPath}
		if p.Exported, err = exportedFuncs(p.ImportPath, f[2], f[3:]); err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// exportedFuncs returns how many exported functions and methods go/doc
// finds in the package's files: the entry points pkgsite's index lists.
func exportedFuncs(importPath, dir string, names []string) (int, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return 0, err
		}
		files = append(files, f)
	}
	d, err := doc.NewFromFiles(fset, files, importPath)
	if err != nil {
		return 0, fmt.Errorf("go/doc %s: %w", importPath, err)
	}
	n := len(d.Funcs)
	for _, t := range d.Types {
		n += len(t.Funcs) + len(t.Methods)
	}
	return n, nil
}

// goCmd runs the go command in dir and returns its standard output.
func goCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return string(out), nil
}

// server is a running pkgsite.
type server struct {
	cmd  *exec.Cmd
	base string        // "http://127.0.0.1:PORT"
	log  *syncBuffer   // its standard output and error
	done chan struct{} // closed when it exits
	err  error         // its exit status, once done is closed
}

// startPkgsite starts pkgsite on a free loopback port serving the module
// directories, and waits until it serves its home page. The modules' paths
// are added to GOPRIVATE in its environment: pkgsite then does not ask
// deps.dev and codewiki.google about them (internal/frontend/links.go), so
// that it needs no network.
//
// The port is one that was free a moment before pkgsite binds it; should
// another process take it meanwhile, pkgsite exits and is started again on
// another, up to three times.
func startPkgsite(bin string, dirs, modules []string, timeout time.Duration) (*server, error) {
	var err error
	for range 3 {
		var s *server
		if s, err = startPkgsiteOnce(bin, dirs, modules, timeout); err == nil || !errors.Is(err, errPortTaken) {
			return s, err
		}
	}
	return nil, err
}

// errPortTaken is wrapped by startPkgsiteOnce's error when pkgsite exited
// because its port was in use.
var errPortTaken = errors.New("port in use")

// startPkgsiteOnce starts pkgsite once, as startPkgsite describes.
func startPkgsiteOnce(bin string, dirs, modules []string, timeout time.Duration) (*server, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("pkgsite: %w (install it with: bash hack/tools/checkers.sh pkgsite)", err)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	// -list=false: serve only the given modules, not their whole build
	// lists; dependencies' pages are not needed to check ours.
	args := append([]string{"-http=" + addr, "-list=false"}, dirs...)
	s := &server{base: "http://" + addr, log: &syncBuffer{}, done: make(chan struct{})}
	goprivate, err := goCmd(".", "env", "GOPRIVATE")
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(abs, args...)
	s.cmd.Env = append(os.Environ(), "GOPRIVATE="+strings.Join(append([]string{strings.TrimSpace(goprivate)}, modules...), ","))
	s.cmd.Stdout = s.log
	s.cmd.Stderr = s.log
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		status, _, err := get(client, s.base+"/")
		if err == nil && status == http.StatusOK {
			return s, nil
		}
		select {
		case <-s.done:
			if strings.Contains(s.log.String(), "address already in use") {
				return nil, fmt.Errorf("pkgsite on %s: %w", addr, errPortTaken)
			}
			return nil, fmt.Errorf("pkgsite exited before serving (%v):\n%s", s.err, s.log.String()) //nolint:errorlint // nil after a clean exit, which %w would print as %!w(<nil>)
		case <-ctx.Done():
			stopErr := s.stop()
			return nil, fmt.Errorf("pkgsite did not serve %s within %s (stop: %v):\n%s", s.base, timeout, stopErr, s.log.String()) //nolint:errorlint // nil after a clean stop; the timeout is the failure
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// stop interrupts pkgsite and waits for it to exit, killing it if it has
// not exited after five seconds.
func (s *server) stop() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(5 * time.Second):
	}
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-s.done
	return nil
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", err
	}
	return addr, nil
}

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
