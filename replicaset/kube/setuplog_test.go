package kube_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/replicakit/replicakit/replicaset/kube"
)

// entry is one record of a recordingSink: an Info's or an Error's message,
// its error, and its key-value pairs, the logger's own first.
type entry struct {
	msg string
	err error
	kv  map[string]any
}

// recordingSink is a logr.LogSink that keeps every entry.
type recordingSink struct {
	mu      *sync.Mutex
	entries *[]entry
	values  []any
}

func newRecordingSink() recordingSink {
	return recordingSink{mu: &sync.Mutex{}, entries: &[]entry{}}
}

func (s recordingSink) Init(logr.RuntimeInfo)                  {}
func (s recordingSink) Enabled(int) bool                       { return true }
func (s recordingSink) Info(_ int, msg string, kv ...any)      { s.add(msg, nil, kv) }
func (s recordingSink) Error(err error, msg string, kv ...any) { s.add(msg, err, kv) }
func (s recordingSink) WithName(string) logr.LogSink           { return s }
func (s recordingSink) WithValues(kv ...any) logr.LogSink {
	s.values = append(append([]any{}, s.values...), kv...)
	return s
}

func (s recordingSink) add(msg string, err error, kv []any) {
	e := entry{msg: msg, err: err, kv: map[string]any{}}
	all := append(append([]any{}, s.values...), kv...)
	for i := 0; i+1 < len(all); i += 2 {
		e.kv[fmt.Sprint(all[i])] = all[i+1]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.entries = append(*s.entries, e)
}

// about returns the entries whose message contains s.
func (s recordingSink) about(sub string) []entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []entry
	for _, e := range *s.entries {
		if strings.Contains(e.msg, sub) {
			out = append(out, e)
		}
	}
	return out
}

// setUpPools sets up a WorkerPool reconciler with adapter on a manager
// that logs to a recording sink, with no API server (a fixed REST
// mapping, as the package example), and returns the sink.
func setUpPools(t *testing.T, adapter kube.Adapter[*WorkerPool, *corev1.Pod]) recordingSink {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	scheme.AddKnownTypes(poolGV, &WorkerPool{}, &WorkerPoolList{})
	metav1.AddToGroupVersion(scheme, poolGV)
	sink := newRecordingSink()
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:6443"}, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 logr.New(sink),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
			m := meta.NewDefaultRESTMapper(nil)
			m.Add(poolGV.WithKind("WorkerPool"), meta.RESTScopeNamespace)
			m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
			return m, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &kube.Reconciler[*WorkerPool, *corev1.Pod]{
		Adapter: adapter,
	}
	if err := r.SetupWithManager(mgr, "workerpool"); err != nil {
		t.Fatal(err)
	}
	return sink
}

// wrongZones has a Zoner's methods, one of another signature (the child
// as a value): it is not a Zoner.
type wrongZones struct{ poolAdapter }

func (wrongZones) Zone(p corev1.Pod) string        { return p.Labels[kube.ZoneLabel] }
func (wrongZones) SetZone(p *corev1.Pod, z string) { p.Labels = map[string]string{kube.ZoneLabel: z} }

// pointerMatcher is a TemplateMatcher only through its pointer, and is
// given to the Reconciler as a value.
type pointerMatcher struct{ poolAdapter }

func (*pointerMatcher) MatchesTemplate(*WorkerPool, *corev1.Pod) bool { return true }

// TestSetupWithManager_LogsOptionalInterfaces: set-up tells, in the
// manager's log, which optional interfaces the Adapter implements and
// which not, and says as an error when one is missed for a signature or
// a pointer receiver, naming the method.
func TestSetupWithManager_LogsOptionalInterfaces(t *testing.T) {
	const (
		zoner   = "kube.Zoner[*v1.Pod]"
		updater = "kube.InPlaceUpdater[*kube_test.WorkerPool,*v1.Pod]"
		matcher = "kube.TemplateMatcher[*kube_test.WorkerPool,*v1.Pod]"
		checker = "kube.HealthChecker[*v1.Pod]"
		starter = "kube.Starter[*v1.Pod]"
		restart = "kube.Restarter[*kube_test.WorkerPool,*v1.Pod]"
		rollout = "kube.InPlaceRollout[*kube_test.WorkerPool,*v1.Pod]"
		subres  = "kube.InPlaceSubresource[*v1.Pod]"
	)
	tests := []struct {
		desc      string
		adapter   kube.Adapter[*WorkerPool, *corev1.Pod]
		found     []string
		notFound  []string
		errs      []string // the interfaces an error names
		errMethod string   // a method one of them names
	}{
		{"none", poolAdapter{}, nil, []string{zoner, updater, matcher, checker, starter, restart, rollout, subres}, nil, ""},
		{"PodZones", zonedPoolAdapter{}, []string{zoner}, []string{updater, matcher, checker, starter, restart, rollout, subres}, nil, ""},
		{"a Zone of another signature", wrongZones{}, nil, []string{zoner, updater, matcher, checker, starter, restart, rollout, subres}, []string{zoner}, "its method Zone is func(v1.Pod) string, want func(*v1.Pod) string"},
		{"a pointer receiver", pointerMatcher{}, nil, []string{zoner, updater, matcher, checker, starter, restart, rollout, subres}, []string{matcher}, "its method MatchesTemplate has a pointer receiver"},
		{"the pointer", &pointerMatcher{}, []string{matcher}, []string{zoner, updater, checker, starter, restart, rollout, subres}, nil, ""},
	}
	for _, tt := range tests {
		sink := setUpPools(t, tt.adapter)
		infos := sink.about("optional interfaces")
		if len(infos) != 1 {
			t.Errorf("%s: %d entries about the optional interfaces, want 1: %v", tt.desc, len(infos), infos)
			continue
		}
		e := infos[0]
		if e.kv["controller"] != "workerpool" {
			t.Errorf("%s: controller %v, want workerpool", tt.desc, e.kv["controller"])
		}
		found, _ := e.kv["implements"].([]string)
		notFound, _ := e.kv["doesNotImplement"].([]string)
		if diff := cmp.Diff(tt.found, found); diff != "" {
			t.Errorf("%s: implements (-want +got):\n%s", tt.desc, diff)
		}
		if diff := cmp.Diff(tt.notFound, notFound); diff != "" {
			t.Errorf("%s: doesNotImplement (-want +got):\n%s", tt.desc, diff)
		}
		var errs []string
		for _, e := range sink.about("does not implement") {
			if e.err == nil {
				t.Errorf("%s: %q logged without an error", tt.desc, e.msg)
				continue
			}
			errs = append(errs, fmt.Sprint(e.kv["interface"]))
			if !strings.Contains(e.err.Error(), tt.errMethod) {
				t.Errorf("%s: error %q does not say %q", tt.desc, e.err, tt.errMethod)
			}
		}
		if diff := cmp.Diff(tt.errs, errs); diff != "" {
			t.Errorf("%s: errors about interfaces (-want +got):\n%s", tt.desc, diff)
		}
	}
}
