package slot_test

import (
	"fmt"

	"leasekit.dev/slot"
)

// A reconciler stores each generation's build; a reader leases the one it
// reads, so the reconciler knows to keep it when it cleans up.
func ExampleSlot() {
	var builds slot.Slot[int64, string]
	builds.Set(1, "/var/lib/op/gen-1")

	l, ok := builds.Lease() // a render starts against generation 1
	if !ok {
		return
	}
	defer l.Release()

	builds.Set(2, "/var/lib/op/gen-2") // the next generation lands meanwhile
	gen, dir, _ := builds.Get()
	fmt.Println("current:", gen, dir)
	fmt.Println("render reads:", l.Key(), l.Value())
	fmt.Println("keep:", builds.Leased())
	// Output:
	// current: 2 /var/lib/op/gen-2
	// render reads: 1 /var/lib/op/gen-1
	// keep: [1]
}

func ExampleSlot_SetIfNewer() {
	var s slot.Slot[int64, string]
	fmt.Println(s.SetIfNewer(5, "five"))
	fmt.Println(s.SetIfNewer(4, "four")) // a stale update is refused
	k, v, _ := s.Get()
	fmt.Println(k, v)
	// Output:
	// true
	// false
	// 5 five
}

func ExampleLease_Release() {
	var s slot.Slot[string, int]
	s.Set("v1", 1)
	l, _ := s.Lease()
	s.Clear() // the lease outlives the value it was taken on
	fmt.Println(s.Leased(), l.Value())
	l.Release()
	l.Release() // idempotent
	fmt.Println(s.Leased())
	// Output:
	// [v1] 1
	// []
}

// Two builds of one generation share its key; LeasedValues tells them
// apart, so the owner keeps the directory of the one a reader still holds.
func ExampleSlot_LeasedValues() {
	var builds slot.Slot[int64, string]
	builds.Set(7, "/var/lib/op/gen-7")

	l, _ := builds.Lease() // a render starts against the first build
	defer l.Release()

	builds.Set(7, "/var/lib/op/gen-7-3f2a9c01b4e5") // generation 7 again, other content
	for _, v := range builds.LeasedValues() {
		fmt.Println(v.Key, v.Value, v.Leases, v.Current)
	}
	fmt.Println("keys:", builds.Leased())
	// Output:
	// 7 /var/lib/op/gen-7 1 false
	// keys: [7]
}
