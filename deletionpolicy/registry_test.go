package deletionpolicy_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/deletionpolicy"
)

func TestRegistry(t *testing.T) {
	var reg deletionpolicy.Registry // the zero value is ready to use
	if err := reg.Register("Oldest", deletionpolicy.Oldest{}); err != nil {
		t.Fatalf("Register(Oldest): %v", err)
	}
	if err := reg.Register("Random", deletionpolicy.Random{Seed: 1}); err != nil {
		t.Fatalf("Register(Random): %v", err)
	}
	if err := reg.Register("Oldest", deletionpolicy.Newest{}); !errors.Is(err, deletionpolicy.ErrDuplicate) {
		t.Errorf("Register(Oldest) twice: error %v, want ErrDuplicate", err)
	}
	if err := reg.Register("", deletionpolicy.Newest{}); !errors.Is(err, deletionpolicy.ErrInvalidRegistration) {
		t.Errorf("Register(\"\"): error %v, want ErrInvalidRegistration", err)
	}
	if err := reg.Register("Nil", nil); !errors.Is(err, deletionpolicy.ErrInvalidRegistration) {
		t.Errorf("Register(Nil, nil): error %v, want ErrInvalidRegistration", err)
	}
	if err := reg.Register("TypedNil", (*deletionpolicy.Random)(nil)); !errors.Is(err, deletionpolicy.ErrInvalidRegistration) {
		t.Errorf("Register(TypedNil, (*Random)(nil)): error %v, want ErrInvalidRegistration", err)
	}
	if diff := cmp.Diff([]string{"Oldest", "Random"}, reg.Names()); diff != "" {
		t.Errorf("Names() mismatch (-want +got):\n%s", diff)
	}
	p, err := reg.Lookup("Oldest")
	if err != nil || p != (deletionpolicy.Oldest{}) {
		t.Errorf("Lookup(Oldest) = %v, %v; want Oldest{}, nil", p, err)
	}

	_, err = reg.Lookup("random")
	var unknown *deletionpolicy.UnknownPolicyError
	if !errors.As(err, &unknown) {
		t.Fatalf("Lookup(random) error %v, want *UnknownPolicyError", err)
	}
	if diff := cmp.Diff(&deletionpolicy.UnknownPolicyError{Name: "random", Known: []string{"Oldest", "Random"}}, unknown); diff != "" {
		t.Errorf("UnknownPolicyError mismatch (-want +got):\n%s", diff)
	}
	const msg = `deletionpolicy: unknown policy "random" (known: Oldest, Random)`
	if err.Error() != msg {
		t.Errorf("Lookup(random) error %q, want %q", err, msg)
	}
}

func TestDefault(t *testing.T) {
	reg := deletionpolicy.Default()
	want := []string{"HighestOrdinal", "Newest", "Oldest", "Random", "UnhealthyFirst"}
	if diff := cmp.Diff(want, reg.Names()); diff != "" {
		t.Errorf("Default().Names() mismatch (-want +got):\n%s", diff)
	}
	if p, _ := reg.Lookup("Random"); p != (deletionpolicy.Random{}) {
		t.Errorf("Default() Random = %#v, want Random{} (seeded per owner through Env.Seed)", p)
	}
	// Each call builds its own registry: registering in one leaves another alone.
	if err := reg.Register("Mine", deletionpolicy.Oldest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := deletionpolicy.Default().Lookup("Mine"); err == nil {
		t.Error("a policy registered in one Default registry is visible in another")
	}
}

// TestUsesOrdinals: only HighestOrdinal among the shipped policies needs
// ordinals, so a binding that names replicas randomly can refuse it.
func TestUsesOrdinals(t *testing.T) {
	reg := deletionpolicy.Default()
	got := map[string]bool{}
	for _, name := range reg.Names() {
		p, _ := reg.Lookup(name)
		got[name] = deletionpolicy.UsesOrdinals(p)
	}
	want := map[string]bool{"HighestOrdinal": true, "Newest": false, "Oldest": false, "Random": false, "UnhealthyFirst": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UsesOrdinals per shipped policy (-want +got):\n%s", diff)
	}
}

// TestRegistry_Concurrent registers and looks up from many goroutines; run
// with -race.
func TestRegistry_Concurrent(t *testing.T) {
	reg := deletionpolicy.Default()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := reg.Register(fmt.Sprintf("p%d", i), deletionpolicy.Oldest{}); err != nil {
				t.Error(err)
			}
			if _, err := reg.Lookup("Random"); err != nil {
				t.Error(err)
			}
			_ = reg.Names()
		})
	}
	wg.Wait()
	if got := len(reg.Names()); got != 13 {
		t.Errorf("after 8 concurrent registrations: %d names, want 13", got)
	}
}

// A spec names its policy; an unknown name lists the known ones, which a
// controller can show in a condition.
func ExampleRegistry_Lookup() {
	reg := deletionpolicy.Default()
	if _, err := reg.Lookup("Random"); err == nil {
		fmt.Println("Random found")
	}
	_, err := reg.Lookup("LeastLoaded")
	fmt.Println(err)
	// Output:
	// Random found
	// deletionpolicy: unknown policy "LeastLoaded" (known: HighestOrdinal, Newest, Oldest, Random, UnhealthyFirst)
}

// Register a policy of your own beside the shipped ones.
func ExampleRegistry_Register() {
	reg := deletionpolicy.Default()
	if err := reg.Register("OldestFirst", deletionpolicy.Oldest{}); err != nil {
		fmt.Println(err)
	}
	fmt.Println(reg.Names())
	// Output:
	// [HighestOrdinal Newest Oldest OldestFirst Random UnhealthyFirst]
}

// The shipped policies, under the names a spec uses.
func ExampleDefault() {
	reg := deletionpolicy.Default()
	fmt.Println(reg.Names())
	// Output:
	// [HighestOrdinal Newest Oldest Random UnhealthyFirst]
}
