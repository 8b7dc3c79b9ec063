package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podCount follows the number of Pods in a namespace through an informer,
// so waiting costs the API server one watch, not repeated lists.
type podCount struct {
	n    atomic.Int64
	stop chan struct{}
}

func countPods(cs kubernetes.Interface, ns string) (*podCount, error) {
	c := &podCount{stop: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.n.Add(1) },
		DeleteFunc: func(any) { c.n.Add(-1) },
	}); err != nil {
		return nil, err
	}
	f.Start(c.stop)
	if !cache.WaitForCacheSync(c.stop, inf.HasSynced) {
		return nil, fmt.Errorf("pod informer for %s did not sync", ns)
	}
	return c, nil
}

// await waits until exactly n Pods exist.
func (c *podCount) await(ctx context.Context, n int, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for c.n.Load() != int64(n) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d Pods after %v, want %d", c.n.Load(), limit, n)
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}

func (c *podCount) close() { close(c.stop) }

// writes are the API server's write requests so far, by resource.
type writes map[string]float64

// scrapeWrites reads apiserver_request_total and sums the writes (POST,
// PUT, PATCH, DELETE and APPLY) by resource, subresource included.
func scrapeWrites(ctx context.Context, cs kubernetes.Interface) (writes, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	w := writes{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, _ := strings.Cut(strings.TrimPrefix(line, "apiserver_request_total{"), "} ")
		l := parseLabels(labels)
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY":
		default:
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		key := l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		w[key] += v
	}
	return w, sc.Err()
}

func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// minus returns the writes made since before, leaving out resources that
// no contender writes (leases and the like).
func (w writes) minus(before writes) writes {
	out := writes{}
	for k, v := range w {
		if strings.HasPrefix(k, "leases") {
			continue
		}
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

func (w writes) total() float64 {
	var t float64
	for _, v := range w {
		t += v
	}
	return t
}

func (w writes) String() string {
	var parts []string
	for _, k := range []string{"pods", "events", "widgets/status", "replicasets/status", "widgets", "replicasets"} {
		if w[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, w[k]))
		}
	}
	for k, v := range w {
		switch k {
		case "pods", "events", "widgets/status", "replicasets/status", "widgets", "replicasets":
		default:
			parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
		}
	}
	return strings.Join(parts, ", ")
}
