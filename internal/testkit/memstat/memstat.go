package memstat

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Status returns the field of /proc/self/status named field, a size in
// kB there, in bytes. It fails where the file or field is missing or the
// value is not a size.
func Status(field string) (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			v = strings.TrimSpace(v)
			kb, err := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
			if err != nil || !strings.HasSuffix(v, " kB") {
				return 0, fmt.Errorf("memstat: %s in /proc/self/status is %q, not a size in kB", field, v)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("memstat: no %s in /proc/self/status", field)
}

// ResetPeak resets the process's peak RSS (VmHWM) to its present RSS,
// through /proc/self/clear_refs. It fails where the system refuses.
func ResetPeak() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}
