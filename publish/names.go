package publish

import (
	"cmp"
	"strings"

	"leasekit.dev/dirlife"
)

// Directory names: a content's directory is named after its key, with the
// key codec's name ("gen-7") when no directory of that key is on disk, and
// otherwise the key's name, a dash and a prefix of the digest in hex
// ("gen-7-3f2a9c01b4e5"), minHex digits long, lengthened by hexStep digits
// while the name is taken.
const (
	minHex  = 12
	hexStep = 4
	maxHex  = 2 * len(dirlife.Digest{})
)

// dirCodec is the publisher's codec for dirlife: a directory's ID is its
// name, and only names of the forms above parse.
type dirCodec[K cmp.Ordered] struct {
	key dirlife.Codec[K]
}

func (c dirCodec[K]) Format(name string) string { return name }

func (c dirCodec[K]) Parse(name string) (string, bool) {
	_, ok := c.keyOf(name)
	return name, ok
}

// keyOf returns the key whose directory name is name, if it is one.
func (c dirCodec[K]) keyOf(name string) (K, bool) {
	if k, ok := c.key.Parse(name); ok {
		return k, true
	}
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		var zero K
		return zero, false
	}
	digits := name[i+1:]
	if len(digits) < minHex || len(digits) > maxHex || (len(digits)-minHex)%hexStep != 0 || !lowerHex(digits) {
		var zero K
		return zero, false
	}
	return c.key.Parse(name[:i])
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// nameFor returns a directory name for id that is not in taken: the key's
// plain name when no directory of the key is taken (keyTaken false), else
// the plain name and the shortest digest prefix not taken. ok is false
// when every candidate is taken, which only a directory of id itself can
// cause.
func nameFor(plain string, digest dirlife.Digest, keyTaken bool, taken func(string) bool) (string, bool) {
	if !keyTaken && !taken(plain) {
		return plain, true
	}
	hexd := digest.String()
	for n := minHex; n <= maxHex; n += hexStep {
		if name := plain + "-" + hexd[:n]; !taken(name) {
			return name, true
		}
	}
	return "", false
}
