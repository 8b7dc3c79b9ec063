package vcsim

import (
	"net/http"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// answerPrivileges answers a HasPrivilegeOnEntity call (AuthorizationManager)
// as vCenter does for an account that lacks the privileges Deny names on
// the entity the call asks about, whatever method they were denied for:
// one boolean per privilege asked, in order, false for a denied one (the
// vSphere API reference's HasPrivilegeOnEntity: "an array of booleans,
// one per privilege, in the order they were requested"). The simulator
// grants every privilege; it answers the call itself when no denial names
// the entity. It reports whether it answered.
func (f *Faults) answerPrivileges(w http.ResponseWriter, method string, body []byte) bool {
	if method != "HasPrivilegeOnEntity" {
		return false
	}
	f.mu.Lock()
	denied := map[string]bool{}
	m, err := simulator.UnmarshalBody(types.TypeFunc(), body)
	req, ok := m.Body.(*types.HasPrivilegeOnEntity)
	if err == nil && ok {
		for r, privileges := range f.denied {
			if r.ref == req.Entity {
				for _, p := range privileges {
					denied[p] = true
				}
			}
		}
	}
	f.mu.Unlock()
	if !ok || len(denied) == 0 {
		return false
	}
	var b strings.Builder
	b.WriteString(`<HasPrivilegeOnEntityResponse xmlns="urn:vim25">`)
	for _, id := range req.PrivId {
		granted := "true"
		if denied[id] {
			granted = "false"
		}
		b.WriteString(`<returnval>` + granted + `</returnval>`)
	}
	b.WriteString(`</HasPrivilegeOnEntityResponse>`)
	writeAnswer(w, b.String())
	return true
}
