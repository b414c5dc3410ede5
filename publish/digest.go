package publish

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/maphash"

	"leasekit.dev/dirlife"
)

// An Identity names one published content: the key it was published at
// and the [dirlife.Digest] of its files. Two publishes share an identity exactly
// when they publish the same files at the same key.
type Identity[K cmp.Ordered] struct {
	Key    K
	Digest dirlife.Digest
}

// String returns the key and the digest, such as "7@sha256:3f2a…".
func (id Identity[K]) String() string {
	return fmt.Sprintf("%v@sha256:%v", id.Key, id.Digest)
}

// fingerprint recognises the files of the current record again without a
// copy of them: two keyed 64-bit hashes summed over the files (so that no
// sort is needed), and the file count. The seeds are drawn per Publisher
// and never leave it, so no input can aim at a collision; two different
// file sets share a fingerprint with a probability near 2^-128.
type fingerprint struct {
	a, b uint64
	n    int
}

func fingerprintOf(seedA, seedB maphash.Seed, files dirlife.Files) fingerprint {
	var ha, hb maphash.Hash
	ha.SetSeed(seedA)
	hb.SetSeed(seedB)
	fp := fingerprint{n: len(files)}
	for name, data := range files {
		fp.a += hashFile(&ha, name, data)
		fp.b += hashFile(&hb, name, data)
	}
	return fp
}

func hashFile(h *maphash.Hash, name string, data []byte) uint64 {
	h.Reset()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(name)))
	h.Write(n[:])
	h.WriteString(name)
	h.Write(data)
	return h.Sum64()
}
