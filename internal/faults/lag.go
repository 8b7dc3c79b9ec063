package faults

import (
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// Lag makes informers lag behind the API server the way a slow or distant
// cache does: every read of a watch stream waits up to Max first, so the
// cache serves older objects for a while and then catches up, with its
// events, as a real one would.
type Lag struct {
	// Max is the longest wait before a read of a watch stream.
	Max time.Duration
	// Reads counts the delayed reads.
	Reads atomic.Int64

	mu  sync.Mutex
	rng *rand.Rand
}

// NewLag returns a Lag of up to max, seeded for repeatable runs.
func NewLag(max time.Duration, seed uint64) *Lag {
	return &Lag{Max: max, rng: rand.New(rand.NewPCG(seed, seed^0x1a9))}
}

// NewCache returns a ctrl.Options.NewCache whose informers lag.
func (l *Lag) NewCache() cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		cfg = rest.CopyConfig(cfg)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &lagging{lag: l, next: rt} })
		hc, err := rest.HTTPClientFor(cfg) // the manager's client would bypass the lag
		if err != nil {
			return nil, err
		}
		opts.HTTPClient = hc
		return cache.New(cfg, opts)
	}
}

func (l *Lag) wait() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Duration(l.rng.Int64N(int64(l.Max) + 1))
}

type lagging struct {
	lag  *Lag
	next http.RoundTripper
}

func (t *lagging) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.next.RoundTrip(req)
	if w := req.URL.Query().Get("watch"); err != nil || (w != "true" && w != "1") {
		return res, err
	}
	res.Body = &slowBody{ReadCloser: res.Body, lag: t.lag}
	return res, nil
}

type slowBody struct {
	io.ReadCloser
	lag *Lag
}

func (b *slowBody) Read(p []byte) (int, error) {
	time.Sleep(b.lag.wait())
	b.lag.Reads.Add(1)
	return b.ReadCloser.Read(p)
}
