package size

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A Flag is a size in bytes, written with a binary unit: 256MiB, 1GiB,
// 512KiB, or a plain number of bytes (100, 100B). Ki, Mi and Gi, as
// Kubernetes writes them, are accepted too. It implements flag.Value.
type Flag int64

var units = []struct {
	suffix string
	shift  uint
}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"Gi", 30}, {"Mi", 20}, {"Ki", 10}, {"B", 0}}

// String writes s in the largest binary unit that divides it.
func (s *Flag) String() string {
	for _, u := range units[:3] {
		if n := int64(*s); n != 0 && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.suffix)
		}
	}
	return fmt.Sprintf("%dB", int64(*s))
}

// Set parses v; on failure it leaves s as it was.
func (s *Flag) Set(v string) error {
	num, shift := v, uint(0)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(v, u.suffix); ok {
			num, shift = rest, u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return errors.New("not a size, such as 256MiB, 1GiB or 512KiB")
	}
	*s = Flag(n << shift)
	return nil
}
