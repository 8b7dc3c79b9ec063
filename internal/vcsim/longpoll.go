package vcsim

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// soapMethod finds the method of a SOAP request: the first element in its
// body.
var soapMethod = regexp.MustCompile(`<(?:[\w-]+:)?Body[^>]*>\s*<(?:[\w-]+:)?([\w-]+)`)

// maxWait finds WaitForUpdatesEx's options.maxWaitSeconds.
var maxWait = regexp.MustCompile(`<maxWaitSeconds>(\d+)</maxWaitSeconds>`)

// longPollInterval is how often a waiting WaitForUpdatesEx looks for
// updates.
const longPollInterval = 100 * time.Millisecond

// waitForUpdates serves WaitForUpdatesEx, the property collector's long
// poll, without holding the gate while it waits: served as it is, it would
// hold the gate until an update came, and updates come only from calls
// that wait at the gate. So it asks the simulator to answer at once
// (maxWaitSeconds 0), each time holding the gate, every
// longPollInterval, until there is an update, the caller's wait is over,
// or the caller has gone; with a latency, also each time another call has
// been served (gate.changed), so that a task's end reaches its waiter at
// once.
func (g *gate) waitForUpdates(w http.ResponseWriter, r *http.Request, body []byte) {
	var deadline time.Time // zero: wait as long as it takes
	if m := maxWait.FindSubmatch(body); m != nil {
		secs, _ := strconv.Atoi(string(m[1]))
		deadline = time.Now().Add(time.Duration(secs) * time.Second)
	}
	now := withMaxWaitZero(body)
	for {
		rec := httptest.NewRecorder()
		req := r.Clone(r.Context())
		req.Body = io.NopCloser(bytes.NewReader(now))
		req.ContentLength = int64(len(now))
		g.mu.Lock()
		if g.faults != nil {
			g.faults.took("WaitForUpdatesEx")
		}
		g.serve(rec, req, "WaitForUpdatesEx")
		if g.faults != nil {
			g.faults.took("")
		}
		changed := g.changed // nil without a latency: never ready
		g.mu.Unlock()
		res := rec.Result()
		answer := rec.Body.Bytes()
		// An update set, a fault, the first call of a version (the simulator
		// answers it with the current state) or the end of the wait: answer.
		if res.StatusCode != http.StatusOK || bytes.Contains(answer, []byte("<returnval")) ||
			(!deadline.IsZero() && !time.Now().Before(deadline)) {
			for k, v := range res.Header {
				w.Header()[k] = v
			}
			w.WriteHeader(res.StatusCode)
			_, _ = w.Write(answer)
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(longPollInterval):
		case <-changed:
		}
	}
}

// withMaxWaitZero rewrites a WaitForUpdatesEx request to answer at once.
func withMaxWaitZero(body []byte) []byte {
	if maxWait.Match(body) {
		return maxWait.ReplaceAll(body, []byte("<maxWaitSeconds>0</maxWaitSeconds>"))
	}
	if i := bytes.Index(body, []byte("<options>")); i >= 0 {
		i += len("<options>")
		return slices.Concat(body[:i], []byte("<maxWaitSeconds>0</maxWaitSeconds>"), body[i:])
	}
	if i := bytes.Index(body, []byte("</WaitForUpdatesEx>")); i >= 0 {
		return slices.Concat(body[:i], []byte("<options><maxWaitSeconds>0</maxWaitSeconds></options>"), body[i:])
	}
	return body
}
