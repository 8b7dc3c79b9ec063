package vsphere

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
	"golang.org/x/time/rate"
)

// limiter is a soap.RoundTripper that takes a token from a rate limiter
// before each call (Config.RequestsPerSecond).
type limiter struct {
	soap.RoundTripper
	rate *rate.Limiter
}

// RoundTrip waits for a token, under ctx, and makes the call.
func (l *limiter) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	if err := l.rate.Wait(ctx); err != nil {
		return fmt.Errorf("wait for the rate limit toward vCenter (Config.RequestsPerSecond %v): %w", l.rate.Limit(), err)
	}
	return l.RoundTripper.RoundTrip(ctx, req, res)
}

// limited returns client, or a copy of it whose calls keep to c's rate
// limit.
func (c Config) limited(client *vim25.Client) *vim25.Client {
	per := c.RequestsPerSecond
	if per < 0 {
		return client
	}
	if per == 0 {
		per = DefaultRequestsPerSecond
	}
	burst := c.RequestBurst
	if burst == 0 {
		burst = max(1, int(2*per))
	}
	lc := *client
	lc.RoundTripper = &limiter{RoundTripper: client.RoundTripper, rate: rate.NewLimiter(rate.Limit(per), burst)}
	return &lc
}
