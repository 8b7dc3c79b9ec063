package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/vmware/govmomi/task"
	"github.com/vmware/govmomi/vim25/types"
)

// TestTransient: a lost answer is retried without counting against the
// VM's zone; vCenter's refusal (a fault) counts.
func TestTransient(t *testing.T) {
	refused := task.Error{LocalizedMethodFault: &types.LocalizedMethodFault{Fault: &types.InsufficientResourcesFault{}, LocalizedMessage: "no room"}}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("clone: %w", context.DeadlineExceeded), true},
		{fmt.Errorf("clone: %w", &url.Error{Op: "Post", URL: "https://vc/sdk", Err: errors.New("connection reset by peer")}), true},
		{fmt.Errorf("clone: %w", refused), false},
		{errors.New("InvalidState"), false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
