package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/replicakit/replicakit/internal/netcut"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestConnectVCenters: over several vCenters, one that does not answer at
// start is left to connect later (its zones are unreachable meanwhile)
// while one that refuses the login stops the manager with an error naming
// it; over one vCenter, one that does not answer is an error.
func TestConnectVCenters(t *testing.T) {
	ctx := context.Background()
	east, west := vcsimtest.Start(t), vcsimtest.Start(t)
	cut, link := vcsimtest.BehindLink(t, west)
	link.Cut(netcut.Refuse)

	r, closeAll, err := connectVCenters(ctx, logr.Discard(), east.Config(), map[string]vsphere.Config{"west": cut})
	if err != nil {
		t.Fatalf("with west cut off: %v; want the manager to start", err)
	}
	r.Zones = map[string]vmprovider.Placement{"w": {Endpoint: "west"}, "e": {}}
	if _, err := r.Reachable("w"); !errors.Is(err, vmprovider.ErrUnreachable) {
		t.Errorf("zone w (on west, cut off) reachable: %v; want ErrUnreachable", err)
	}
	if _, err := r.Reachable("e"); err != nil {
		t.Errorf("zone e (on the default vCenter): %v; want it reachable", err)
	}
	closeAll()

	refused := west.Config()
	refused.Password = "wrong-Secr3t"
	if _, _, err := connectVCenters(ctx, logr.Discard(), east.Config(), map[string]vsphere.Config{"west": refused}); err == nil ||
		!strings.Contains(err.Error(), "vCenter west") || errors.Is(err, vmprovider.ErrUnreachable) {
		t.Errorf("with west refusing the login: %v; want an error naming west", err)
	}
	if _, _, err := connectVCenters(ctx, logr.Discard(), cut, nil); !errors.Is(err, vmprovider.ErrUnreachable) {
		t.Errorf("with the only vCenter cut off: %v; want ErrUnreachable", err)
	}
}
