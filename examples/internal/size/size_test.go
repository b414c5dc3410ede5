package size_test

import (
	"testing"

	"leasekit.dev/examples/internal/size"
)

func TestFlag(t *testing.T) {
	for in, want := range map[string]int64{"256MiB": 256 << 20, "1GiB": 1 << 30, "512Ki": 512 << 10, "4096": 4096, "100B": 100, "2Gi": 2 << 30} {
		var s size.Flag
		if err := s.Set(in); err != nil || int64(s) != want {
			t.Errorf("%q: %d, %v; want %d", in, s, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "1.5GiB", "-1MiB", "256MB", "256 MiB", "1e9", "99999999999GiB"} {
		s := size.Flag(7)
		if err := s.Set(in); err == nil || s != 7 {
			t.Errorf("%q: accepted as %d", in, s)
		}
	}
	for n, want := range map[int64]string{256 << 20: "256MiB", 3 << 30: "3GiB", 1536: "1536B", 0: "0B"} {
		s := size.Flag(n)
		if got := s.String(); got != want {
			t.Errorf("%d prints as %s, want %s", n, got, want)
		}
	}
}
