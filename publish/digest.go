package publish

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"slices"

	"leasekit.dev/dirlife"
)

// A Digest is the SHA-256 digest of a file set, as [DigestFiles] computes
// it.
type Digest [sha256.Size]byte

// String returns d in lower-case hexadecimal, 64 digits.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// fileMode is the mode [dirlife.Layout.Write] gives every file; it is part
// of the digest, so that a file set written with other modes would have
// another identity.
const fileMode = 0o644

// digestVersion starts every digest's input, so that a change of the
// encoding changes every identity.
const digestVersion = "leasekit.dev/publish files v1\n"

// DigestFiles returns the digest of files: SHA-256 over the file count and,
// for each file in ascending order of name, the name, the file's mode and
// the contents, each length-prefixed, so that no two distinct file sets
// share an encoding. It is deterministic across processes and machines.
func DigestFiles(files dirlife.Files) Digest {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	h := sha256.New()
	var n [8]byte
	put := func(v uint64) {
		binary.BigEndian.PutUint64(n[:], v)
		h.Write(n[:])
	}
	h.Write([]byte(digestVersion))
	put(uint64(len(names)))
	for _, name := range names {
		data := files[name]
		put(uint64(len(name)))
		h.Write([]byte(name))
		put(fileMode)
		put(uint64(len(data)))
		h.Write(data)
	}
	var d Digest
	h.Sum(d[:0])
	return d
}

// An Identity names one published content: the key it was published at
// and the digest of its files. Two publishes share an identity exactly
// when they publish the same files at the same key.
type Identity[K cmp.Ordered] struct {
	Key    K
	Digest Digest
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
