package main

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"

	"github.com/replicakit/replicakit/internal/benchkit"
)

// A rollout's writes are the controller's and kwok's on one API server,
// whose apiserver_request_total does not say who made a request. kwok's
// are told apart by what they are: every Pod status write (no controller
// here writes one), its Nodes', and its deletes of Pods being deleted.
// The controllers' deletes are graceful (the Pods are on a Node); kwok's
// delete with no grace period then removes each Pod, and the API server
// does that in two steps, an update of the grace period and the removal,
// so kwok sees the Pod change once more and deletes it again, answered
// 404. So a rollout that removes n Pods carries n of kwok's deletes
// answered 200, and its deletes answered 404, which are counted as kwok's
// (a controller deletes only live Pods, which it just saw, here).

// requestKey is one series of apiserver_request_total, as far as the
// rollouts need it.
type requestKey struct {
	resource string // with its subresource: "pods/status"
	verb     string
	code     string
}

// requests are the API server's write requests so far.
type requests map[requestKey]float64

// scrapeRequests reads the API server's write requests (POST, PUT, PATCH,
// DELETE and APPLY) by resource, verb and answer.
func scrapeRequests(ctx context.Context, cs kubernetes.Interface) (requests, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	out := requests{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		series, ok := strings.CutPrefix(sc.Text(), "apiserver_request_total{")
		labels, value, ok2 := strings.Cut(series, "} ")
		if !ok || !ok2 {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				l[k] = strings.Trim(v, `"`)
			}
		}
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY":
		default:
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil || strings.HasPrefix(l["resource"], "leases") {
			continue
		}
		k := requestKey{resource: l["resource"], verb: l["verb"], code: l["code"]}
		if l["subresource"] != "" {
			k.resource += "/" + l["subresource"]
		}
		out[k] += v
	}
	return out, sc.Err()
}

// split returns the writes made since before, by resource, into the
// controller's and kwok's, leaving out the harness's one write of the
// owner's resource (the template change). removed is how many Pods a
// watch saw removed meanwhile.
func (r requests) split(before requests, owner string, removed int) (controller, kwok benchkit.Writes) {
	controller, kwok = benchkit.Writes{}, benchkit.Writes{}
	for k, v := range r {
		d := v - before[k]
		if d <= 0 {
			continue
		}
		switch {
		case k.resource == "pods/status" || strings.HasPrefix(k.resource, "nodes"):
			kwok[k.resource] += d
		case k.resource == "pods" && k.verb == "DELETE" && k.code == "404":
			kwok["pods (delete again, 404)"] += d
		case k.resource == "pods" && k.verb == "DELETE" && k.code == "200":
			n := min(d, float64(removed))
			kwok["pods (delete)"] += n
			if d > n {
				controller[k.resource] += d - n
			}
		default:
			controller[k.resource] += d
		}
	}
	if controller[owner]--; controller[owner] <= 0 {
		delete(controller, owner)
	}
	return controller, kwok
}
