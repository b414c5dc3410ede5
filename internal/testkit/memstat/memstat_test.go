//go:build linux

package memstat_test

import (
	"strings"
	"testing"

	"leasekit.dev/internal/testkit/memstat"
)

// TestStatus: the RSS and its peak read as sizes, the peak no smaller; a
// field that is missing or not a size is refused by name.
func TestStatus(t *testing.T) {
	rss, err := memstat.Status("VmRSS")
	if err != nil || rss <= 0 || rss%1024 != 0 {
		t.Fatalf("VmRSS = %d, %v", rss, err)
	}
	hwm, err := memstat.Status("VmHWM")
	if err != nil || hwm < rss {
		t.Fatalf("VmHWM = %d, %v; VmRSS %d", hwm, err, rss)
	}
	for _, field := range []string{"NoSuchField", "Threads"} {
		if _, err := memstat.Status(field); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Status(%q) = %v, want an error naming it", field, err)
		}
	}
}
