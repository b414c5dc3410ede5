package modread

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
)

// Digest returns the content digest of a module's files, the one
// Platform.Digest and InstanceSnapshot.Digest hold: "sha256:" and 64
// hexadecimal digits over the names in order, each with its length, its
// contents' length and their SHA-256. It covers every byte a build or
// render can read of the files and nothing else (not their modes), so
// equal digests mean equal evaluations. A dirlife.Digest, which also
// covers modes, directories and links, names a directory's identity;
// publish's keyed fingerprint guards a cache against collisions a tenant
// chooses; this one names what CUE reads.
func Digest(files map[string][]byte) string {
	return digestSums(files, func(data []byte) (int, [sha256.Size]byte) { return len(data), sha256.Sum256(data) })
}

// digestSums is Digest over files whose lengths and sums sum gives.
func digestSums[F any](files map[string]F, sum func(F) (int, [sha256.Size]byte)) string {
	h := sha256.New()
	var buf []byte
	for _, name := range slices.Sorted(maps.Keys(files)) {
		n, s := sum(files[name])
		buf = strconv.AppendInt(buf[:0], int64(len(name)), 10)
		buf = append(append(append(buf, ':'), name...), 0)
		buf = append(strconv.AppendInt(buf, int64(n), 10), ':')
		h.Write(buf)
		h.Write(s[:])
	}
	var out [sha256.Size]byte
	return "sha256:" + hex.EncodeToString(h.Sum(out[:0]))
}
