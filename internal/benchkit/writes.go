package benchkit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// Writes are the API server's write requests so far, by resource
// ("pods", "widgets/status", ...).
type Writes map[string]float64

// ScrapeWrites reads the API server's apiserver_request_total and sums the
// writes (POST, PUT, PATCH, DELETE and APPLY) by resource, subresource
// included.
func ScrapeWrites(ctx context.Context, cs kubernetes.Interface) (Writes, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	w := Writes{}
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

// Minus returns the writes made since before, leaving out resources that
// no contender writes (leases and the like).
func (w Writes) Minus(before Writes) Writes {
	out := Writes{}
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

// Total is the sum of the writes over all resources.
func (w Writes) Total() float64 {
	var t float64
	for _, v := range w {
		t += v
	}
	return t
}

// known are the resources String lists first, in this order.
var known = []string{"pods", "events", "widgets/status", "replicasets/status", "widgets", "replicasets"}

// String lists the writes by resource, the owners' and Pods' first.
func (w Writes) String() string {
	var parts []string
	for _, k := range known {
		if w[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, w[k]))
		}
	}
	for k, v := range w {
		if !slices.Contains(known, k) {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
		}
	}
	return strings.Join(parts, ", ")
}
