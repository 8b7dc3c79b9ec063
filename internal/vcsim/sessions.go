package vcsim

import (
	"context"
	"fmt"
	"net/url"

	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
)

// EndSessions ends every session of the vCenter that c reaches except
// c's own, as an administrator or vCenter's idle timeout does, over the
// API, and returns how many it ended; ending none is an error, since a
// test that calls it means to take some client's session away.
func EndSessions(ctx context.Context, c *vim25.Client) (int, error) {
	sm := session.NewManager(c)
	own, err := sm.UserSession(ctx)
	if err != nil {
		return 0, err
	}
	var m mo.SessionManager
	if err := property.DefaultCollector(c).RetrieveOne(ctx, sm.Reference(), []string{"sessionList"}, &m); err != nil {
		return 0, err
	}
	var keys []string
	for _, s := range m.SessionList {
		if s.Key != own.Key {
			keys = append(keys, s.Key)
		}
	}
	if len(keys) == 0 {
		return 0, fmt.Errorf("vcsim: no session but the caller's to end")
	}
	return len(keys), sm.TerminateSession(ctx, keys)
}

// SetPassword makes the simulator accept password, and no longer the one
// it accepted, for its user, as when a vCenter password is rotated;
// sessions already open stay open (EndSessions ends them). The simulator
// reads its credentials at each login: SetPassword takes the gate's lock
// so that no login reads them meanwhile, and needs a serialized simulator
// (Serialized, or a Faults gate).
func (s *Sim) SetPassword(password string) error {
	if s.gate == nil {
		return fmt.Errorf("vcsim: SetPassword needs a serialized simulator")
	}
	s.serialized(func() {
		s.Model.Service.Listen.User = url.UserPassword(s.Username, password)
		s.Password = password
	})
	return nil
}
