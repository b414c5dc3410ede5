package dirlife

import (
	"math/rand/v2"
	"strconv"
)

// tempName returns prefix followed by 16 random hex digits: the name of a
// staging, moved-aside or temporary marker entry in the root. Creation is
// exclusive, so a collision is an error, never a shared entry.
func tempName(prefix string) string {
	return prefix + strconv.FormatUint(rand.Uint64()|1<<63, 16)
}
