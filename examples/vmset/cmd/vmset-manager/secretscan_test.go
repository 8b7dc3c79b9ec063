package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// runAsManager, set to 1 in the environment of a process started from this
// test binary, makes that process vmset-manager (see init).
const runAsManager = "VMSET_MANAGER_TEST_RUN_AS_MANAGER"

// init turns this test binary into vmset-manager when a test starts it with
// runAsManager set: it runs main, which reads the arguments and the
// environment, handles SIGTERM and exits as the built command does, before
// TestMain could start a control plane of its own. A manager run this way is
// a process of its own, as an operator runs it, so that its global state
// (the controller names controller-runtime allows once per process, its
// logger, its metrics registry) is its own, and it shares the test's
// build, with the race detector when the test has it.
func init() {
	if os.Getenv(runAsManager) != "1" {
		return
	}
	main()
	os.Exit(0)
}

// managerProcess is vmset-manager running as a process of its own.
type managerProcess struct {
	name string
	cmd  *exec.Cmd
	out  *testenv.LockedBuffer // standard output and error
	done chan struct{}         // closed once it has exited
}

// startManager starts vmset-manager with args and env in its environment;
// nothing from the test's environment that names a vCenter or a cluster
// (VSPHERE_*, GOVC_*, KUBECONFIG) reaches it. It is killed at the end of
// the test if it still runs then.
//
// Its GOCOVERDIR is a folder of its own: a test binary built with -cover
// that runs as another program writes its coverage there at exit, where it
// would otherwise print a warning among the manager's output.
func startManager(t *testing.T, name string, env map[string]string, args ...string) *managerProcess {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m := &managerProcess{name: name, cmd: exec.Command(exe, args...), out: &testenv.LockedBuffer{}, done: make(chan struct{})}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "VSPHERE_") || strings.HasPrefix(k, "GOVC_") || k == "KUBECONFIG" || k == "GOCOVERDIR" || k == runAsManager {
			continue
		}
		m.cmd.Env = append(m.cmd.Env, kv)
	}
	m.cmd.Env = append(m.cmd.Env, runAsManager+"=1", "GOCOVERDIR="+t.TempDir())
	for _, k := range slices.Sorted(maps.Keys(env)) {
		m.cmd.Env = append(m.cmd.Env, k+"="+env[k])
	}
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = m.cmd.Wait() // the exit code is read from ProcessState
		close(m.done)
	}()
	t.Cleanup(func() {
		select {
		case <-m.done:
		default:
			_ = m.cmd.Process.Kill()
			<-m.done
		}
	})
	return m
}

// exit waits up to within for the process to exit and returns its exit
// code; it fails the test if the process still runs then.
func (m *managerProcess) exit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-m.done:
		return m.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		_ = m.cmd.Process.Kill()
		<-m.done
		t.Fatalf("%s still ran after %v; its last output:\n%s", m.name, within, m.out.Tail(3000))
		return -1
	}
}

// stop sends SIGTERM, as the kubelet does to stop a pod, and returns the
// exit code.
func (m *managerProcess) stop(t *testing.T) int {
	t.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	return m.exit(t, 30*time.Second)
}

// wrongPassword is the password the manager is given where vCenter expects
// another: distinctive, and holding characters that each encoding below
// writes differently.
const wrongPassword = `Wr0ng "pässwörd" <&> 100%/+=?@:'`

// secret is a password with the forms in which a leak of it would show:
// as it is, or encoded as a URL, an HTTP basic authentication header, a
// JSON or XML document, or a quoted Go string would carry it.
type secret struct {
	// label names the password in failure messages.
	label string
	forms []secretForm
}

// secretForm is one encoding of a password.
type secretForm struct{ name, text string }

// newSecret returns password's secret, as username's.
func newSecret(label, username, password string) secret {
	s := secret{label: label}
	add := func(name, text string) {
		if !slices.ContainsFunc(s.forms, func(f secretForm) bool { return f.text == text }) {
			s.forms = append(s.forms, secretForm{name, text})
		}
	}
	quoted := func(q string) string { return q[1 : len(q)-1] }
	add("as it is", password)
	add("query-escaped", url.QueryEscape(password))
	add("path-escaped", url.PathEscape(password))
	add("in a URL's user information", url.UserPassword(username, password).String())
	add("escaped as a URL's password", strings.TrimPrefix(url.UserPassword("", password).String(), ":"))
	add("in an HTTP basic authentication header", base64.StdEncoding.EncodeToString([]byte(username+":"+password)))
	// Base64 of a text holding the password holds the encoding of the
	// password's whole three-byte groups from the first group boundary
	// in it: at its first, second or third byte, as the text before it
	// is 0, 2 or 1 bytes past a boundary.
	for from := range 3 {
		p := []byte(password)[from:]
		whole := p[:len(p)/3*3]
		add(fmt.Sprintf("base64-encoded from byte %d", from), base64.StdEncoding.EncodeToString(whole))
		add(fmt.Sprintf("base64url-encoded from byte %d", from), base64.URLEncoding.EncodeToString(whole))
	}
	b, _ := json.Marshal(password) // a string always marshals
	add("JSON-escaped", quoted(string(b)))
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(password) // a string always encodes
	add("JSON-escaped without HTML escapes", quoted(strings.TrimSpace(plain.String())))
	add("Go-quoted", quoted(strconv.Quote(password)))
	add("Go-quoted in ASCII", quoted(strconv.QuoteToASCII(password)))
	var x strings.Builder
	_ = xml.EscapeText(&x, []byte(password)) // a strings.Builder takes every write
	add("XML-escaped", x.String())
	return s
}

// find returns the first of the secret's forms in text or, when text is a
// JSON document, in any of its strings once decoded (JSON over a URL's
// escapes writes '&' as \u0026, say), with the text around it.
func (s secret) find(text string) (f secretForm, around string, ok bool) {
	texts := []string{text}
	var doc any
	if json.Unmarshal([]byte(text), &doc) == nil {
		texts = append(texts, jsonStrings(doc)...)
	}
	for _, text := range texts {
		for _, f := range s.forms {
			if i := strings.Index(text, f.text); i >= 0 {
				return f, text[max(i-80, 0):min(i+len(f.text)+80, len(text))], true
			}
		}
	}
	return secretForm{}, "", false
}

// leakCheck searches what the manager wrote for secrets, failing the test
// once for each place and form a secret is found in (showing the first
// maxShown), and counts what it searched.
type leakCheck struct {
	secrets  []secret
	reported map[string]bool
	shown    int
	// searched counts the pieces searched, by kind (log lines, Events,
	// VirtualMachines and so on).
	searched map[string]int
}

func newLeakCheck(secrets ...secret) *leakCheck {
	return &leakCheck{secrets: secrets, reported: map[string]bool{}, searched: map[string]int{}}
}

// search fails t if text, found at where, holds a secret in any form.
func (c *leakCheck) search(t *testing.T, kind, where, text string) {
	t.Helper()
	c.searched[kind]++
	for _, s := range c.secrets {
		f, around, ok := s.find(text)
		key := where + "\x00" + s.label + "\x00" + f.name
		if !ok || c.reported[key] {
			continue
		}
		c.reported[key] = true
		switch c.shown++; {
		case c.shown <= maxShown:
			t.Errorf("%s is in %s, %s: …%s…", s.label, where, f.name, around)
		case c.shown == maxShown+1:
			t.Errorf("and in more places, not shown")
		}
	}
}

// maxShown bounds the finds a leakCheck reports one by one.
const maxShown = 20

// jsonStrings returns every string in a decoded JSON document, keys and
// values.
func jsonStrings(doc any) []string {
	var out []string
	switch v := doc.(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, e := range v {
			out = append(out, jsonStrings(e)...)
		}
	case map[string]any:
		for k, e := range v {
			out = append(append(out, k), jsonStrings(e)...)
		}
	}
	return out
}

// output searches every line the manager wrote, and returns the lines.
func (c *leakCheck) output(t *testing.T, m *managerProcess) []string {
	t.Helper()
	lines := slices.Collect(strings.Lines(m.out.String()))
	for i, line := range lines {
		c.search(t, "log line", fmt.Sprintf("%s's output, line %d", m.name, i+1), line)
	}
	return lines
}

// api searches every Event (as core/v1 and as events.k8s.io/v1 show it),
// VirtualMachine, VirtualMachineReplicaSet and Lease in the API server, in
// every namespace.
func (c *leakCheck) api(t *testing.T, cl client.Client) {
	t.Helper()
	ctx := context.Background()
	lists := []struct {
		kind string
		list client.ObjectList
	}{
		{"Event", &corev1.EventList{}},
		{"events.k8s.io Event", &eventsv1.EventList{}},
		{"VirtualMachine", &vmv1.VirtualMachineList{}},
		{"VirtualMachineReplicaSet", &vmv1.VirtualMachineReplicaSetList{}},
		{"Lease", &coordinationv1.LeaseList{}},
	}
	for _, l := range lists {
		if err := cl.List(ctx, l.list); err != nil {
			t.Fatalf("list %ss: %v", l.kind, err)
		}
		var items []client.Object
		switch list := l.list.(type) {
		case *corev1.EventList:
			items = pointers(list.Items)
		case *eventsv1.EventList:
			items = pointers(list.Items)
		case *vmv1.VirtualMachineList:
			items = pointers(list.Items)
		case *vmv1.VirtualMachineReplicaSetList:
			items = pointers(list.Items)
		case *coordinationv1.LeaseList:
			items = pointers(list.Items)
		}
		for _, o := range items {
			b, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			c.search(t, l.kind, fmt.Sprintf("%s %s/%s", l.kind, o.GetNamespace(), o.GetName()), string(b))
		}
	}
}

// pointers returns pointers to a list's items, as client.Objects.
func pointers[T any, PT interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, 0, len(items))
	for i := range items {
		out = append(out, PT(&items[i]))
	}
	return out
}

// metrics searches what the manager serves at metricsURL and returns it.
func (c *leakCheck) metrics(t *testing.T, metricsURL string) string {
	t.Helper()
	code, body, err := get(metricsURL, "")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET %s: status %d, %v", metricsURL, code, err)
	}
	c.search(t, "metrics", "the metrics at "+metricsURL, body)
	return body
}

// jsonLog checks that every line of a manager's output is a JSON log
// record, but for the error main prints last when it fails, and returns
// how many records are at a debug level.
func jsonLog(t *testing.T, name string, lines []string) (debug int) {
	t.Helper()
	for i, line := range lines {
		if i == len(lines)-1 && strings.HasPrefix(line, "vmset-manager: ") {
			break
		}
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Level == "" {
			t.Errorf("%s's output, line %d, is not a JSON log record: %q", name, i+1, line)
			continue
		}
		if strings.HasPrefix(rec.Level, "DEBUG") {
			debug++
		}
	}
	return debug
}

// TestSecretsLeakCheck shows that the search finds a password in the forms
// that leaks take, so that TestSecrets finding none means something, and
// that it finds nothing in what the provider prints of its configuration.
func TestSecretsLeakCheck(t *testing.T) {
	const user = "administrator@vsphere.local"
	s := newSecret("the password", user, wrongPassword)
	var jsonLine, textLine bytes.Buffer
	logErr := &url.Error{Op: "Post", URL: "https://" + url.UserPassword(user, wrongPassword).String() + "@vc.example.com/sdk", Err: errors.New("refused")}
	slog.New(slog.NewJSONHandler(&jsonLine, nil)).Error("failed", "err", logErr)
	slog.New(slog.NewTextHandler(&textLine, nil)).Error("failed", "password", wrongPassword)
	object, err := json.Marshal(vmv1.VirtualMachine{Status: vmv1.VirtualMachineStatus{Hostname: wrongPassword}})
	if err != nil {
		t.Fatal(err)
	}
	var soap strings.Builder
	_ = xml.EscapeText(&soap, []byte(wrongPassword)) // a strings.Builder takes every write
	leaks := map[string]string{
		"a JSON log line with a URL's user information": jsonLine.String(),
		"a text log line with a quoted value":           textLine.String(),
		"an object's JSON":                              string(object),
		"a basic authentication header": "Authorization: Basic " +
			base64.StdEncoding.EncodeToString([]byte(user+":"+wrongPassword)),
		"a query string":                "GET /sdk?user=x&password=" + url.QueryEscape(wrongPassword),
		"a metric label":                "x{password=" + strconv.Quote(wrongPassword) + "} 1",
		"a SOAP login request":          "<Login><userName>x</userName><password>" + soap.String() + "</password></Login>",
		"an error printed with %+q":     fmt.Sprintf("%+q", "log in: "+wrongPassword),
		"base64 of a longer text":       base64.StdEncoding.EncodeToString([]byte(wrongPassword + " and more")),
		"base64 one byte in":            base64.StdEncoding.EncodeToString([]byte("x" + wrongPassword)),
		"base64 two bytes in":           base64.StdEncoding.EncodeToString([]byte("x:" + wrongPassword)),
		"an unescaped password in text": "log in failed with " + wrongPassword + ".",
	}
	for name, text := range leaks {
		if _, _, ok := s.find(text); !ok {
			t.Errorf("the search misses the password in %s: %s", name, text)
		}
	}
	cfg := vsphere.Config{URL: "https://" + url.UserPassword(user, wrongPassword).String() + "@vc.example.com/sdk", Username: user, Password: wrongPassword}
	redacted := fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg)
	if f, _, ok := s.find(redacted); ok {
		t.Errorf("the search finds the password (%s) in the provider's redacted configuration: %s", f.name, redacted)
	}
	for _, f := range s.forms {
		if len(f.text) < 8 {
			t.Errorf("the %s form %q is short enough to turn up by chance", f.name, f.text)
		}
	}
}
