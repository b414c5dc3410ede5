//go:build linux

package dirlife

import "testing"

// TestPruneReturnsItsDescriptors: when a Prune or a rewrite returns, its
// removals hold no descriptor any more: the process holds no more than
// before the call.
func TestPruneReturnsItsDescriptors(t *testing.T) {
	l := genLayout(t)
	l.NoSync = true
	mustWrite(t, l, 1, versionFiles(1, 1))
	for i := range 100 {
		mustWrite(t, l, 2, versionFiles(2, i))
		before := openFDs(t)
		mustWrite(t, l, 3, versionFiles(3, i))
		mustWrite(t, l, 3, versionFiles(3, i+1)) // a rewrite
		if err := l.Prune(1); err != nil {
			t.Fatal(err)
		}
		if after := openFDs(t); after > before {
			t.Fatalf("step %d: %d descriptors open right after Prune, %d before the calls", i, after, before)
		}
	}
}
