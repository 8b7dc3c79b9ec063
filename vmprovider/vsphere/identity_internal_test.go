package vsphere

import (
	"regexp"
	"testing"

	"pgregory.net/rapid"
)

// TestInstanceUUID_NamesItsOwner: an instance UUID made for an owner is a
// well-formed version 8 UUID that names that owner and no other, and two
// made for one owner differ.
func TestInstanceUUID_NamesItsOwner(t *testing.T) {
	form := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	rapid.Check(t, func(t *rapid.T) {
		owner := rapid.StringN(1, 40, -1).Draw(t, "owner")
		other := rapid.StringN(1, 40, -1).Filter(func(s string) bool { return s != owner }).Draw(t, "other")
		u := newInstanceUUID(owner)
		if !form.MatchString(u) {
			t.Fatalf("%q is not a version 8 UUID", u)
		}
		if !ownsUUID(u, owner) {
			t.Fatalf("%q does not name its owner %q", u, owner)
		}
		if ownsUUID(u, other) {
			t.Fatalf("%q names %q too", u, other)
		}
		if ownsUUID(u, "") {
			t.Fatalf("%q names the empty owner", u)
		}
		if v := newInstanceUUID(owner); v == u {
			t.Fatalf("two UUIDs for %q are both %q", owner, u)
		}
	})
	for _, u := range []string{"", "not-a-uuid", "42316b3c-5a2d-11ee-8c99-0242ac120002", "4231"} {
		if ownsUUID(u, "uid-a") {
			t.Errorf("ownsUUID(%q) = true for a UUID vCenter made", u)
		}
	}
}
