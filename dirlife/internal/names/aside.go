package names

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// AsidePrefix begins the name of every entry set aside in a root: a
// moved-aside copy that records its ID (see HeldName), or garbage.
const AsidePrefix = ".aside-"

// TempName returns prefix followed by 16 random hex digits: the name of a
// staging, moved-aside or temporary marker entry in the root. Creation is
// exclusive, so a collision is an error, never a shared entry.
func TempName(prefix string) string {
	return prefix + strconv.FormatUint(rand.Uint64()|1<<63, 16)
}

// A rewrite without an atomic exchange moves the ID's directory aside under
// a name that records the ID and when it left the path:
//
//	.aside-<16 hex digits: Unix nanoseconds><8 random hex digits>-<tag>
//
// where tag is the ID's directory name, or, when that would make the entry
// name longer than a path element may be, "#" and 32 hex digits of the
// name's SHA-256. Until the rewrite completes, that copy is the last one
// published: should the ID's path be empty (a crash between the two renames,
// or a replacement that could not move it back), Prune restores it when it
// keeps the ID. A rewrite that completes renames it to a plain garbage name
// (TempName(AsidePrefix)), as Prune and Reset do with every copy they do not
// restore, so that a superseded copy is never restored later.
const (
	heldStamp = 16 // hex digits of the time the copy was moved aside
	heldRand  = 8  // random hex digits after it
	heldTag   = AsidePrefix + "%016x%08x-%s"
)

// lastHeld is the stamp of the last moved-aside name made in this process:
// stamps increase strictly within a process, whatever the clock's
// resolution, and follow the wall clock across processes.
var lastHeld atomic.Uint64

// HeldName returns a fresh moved-aside name for the directory name of an
// ID whose copy a rewrite moves out of the path.
func HeldName(name string) string {
	return fmt.Sprintf(heldTag, nextHeldStamp(), rand.Uint32(), HeldTagOf(name))
}

// nextHeldStamp returns a stamp greater than any this process made.
func nextHeldStamp() uint64 {
	now := uint64(time.Now().UnixNano())
	for {
		last := lastHeld.Load()
		next := max(now, last+1)
		if lastHeld.CompareAndSwap(last, next) {
			return next
		}
	}
}

// HeldTagOf returns the tag that a moved-aside entry of name carries.
func HeldTagOf(name string) string {
	if len(AsidePrefix)+heldStamp+heldRand+1+len(name) <= MaxElement {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "#" + hex.EncodeToString(sum[:16])
}

// ParseHeld returns the tag and the stamp (which orders copies of one tag,
// oldest first, as strings) of a moved-aside entry that records its ID.
func ParseHeld(entry string) (tag, stamp string, ok bool) {
	rest, found := strings.CutPrefix(entry, AsidePrefix)
	n := heldStamp + heldRand
	if !found || len(rest) < n+2 || rest[n] != '-' || !IsLowerHex(rest[:n]) {
		return "", "", false
	}
	return rest[n+1:], rest[:n], true
}

// IsLowerHex reports whether s is lower-case hexadecimal digits only.
func IsLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// A Restoration is the set of moved-aside copies a Prune puts back.
type Restoration struct {
	From map[string]string // moved-aside entry -> the ID's directory name
	To   map[string]bool   // the directory names restored
}

// StrandedCopies picks, among the entries of Root, the moved-aside copy to
// restore for each ID in keep whose path holds no directory: the newest
// copy that records its directory name. Every other moved-aside copy that
// records an ID is garbage: its ID's path holds a newer publication, or the
// ID is not kept, or a newer copy is restored.
func StrandedCopies(entries []os.DirEntry, keep map[string]bool) Restoration {
	if len(keep) == 0 {
		return Restoration{}
	}
	var byTag map[string]string   // tag -> directory name of a kept ID, made at the first copy
	newest := map[string]string{} // directory name -> entry
	for _, e := range entries {
		tag, stamp, ok := ParseHeld(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		if byTag == nil {
			byTag = make(map[string]string, len(keep))
			for name := range keep {
				byTag[HeldTagOf(name)] = name
			}
		}
		name, kept := byTag[tag]
		if !kept {
			continue
		}
		if cur, seen := newest[name]; !seen || stampOf(cur) < stamp || stampOf(cur) == stamp && cur < e.Name() {
			newest[name] = e.Name()
		}
	}
	if len(newest) == 0 {
		return Restoration{}
	}
	for _, e := range entries {
		if e.IsDir() {
			delete(newest, e.Name()) // the path is full: no Restoration
		}
	}
	r := Restoration{From: make(map[string]string, len(newest)), To: make(map[string]bool, len(newest))}
	for name, e := range newest {
		r.From[e] = name
		r.To[name] = true
	}
	return r
}

// stampOf returns the stamp of a moved-aside entry that records its ID.
func stampOf(entry string) string {
	_, stamp, _ := ParseHeld(entry)
	return stamp
}

// IsPlainAside reports whether name is an aside name as TempName makes
// them: one that no ID, staging directory or other aside entry takes.
func IsPlainAside(name string) bool {
	rest, ok := strings.CutPrefix(name, AsidePrefix)
	return ok && len(rest) == 16 && IsLowerHex(rest) && rest[0] >= '8'
}
