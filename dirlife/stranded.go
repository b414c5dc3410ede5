package dirlife

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"leasekit.dev/dirlife/internal/names"
)

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
// (tempName(asidePrefix)), as Prune and Reset do with every copy they do not
// restore, so that a superseded copy is never restored later.
const (
	heldStamp = 16 // hex digits of the time the copy was moved aside
	heldRand  = 8  // random hex digits after it
	heldTag   = asidePrefix + "%016x%08x-%s"
)

// lastHeld is the stamp of the last moved-aside name made in this process:
// stamps increase strictly within a process, whatever the clock's
// resolution, and follow the wall clock across processes.
var lastHeld atomic.Uint64

// heldName returns a fresh moved-aside name for the directory name of an
// ID whose copy a rewrite moves out of the path.
func heldName(name string) string {
	return fmt.Sprintf(heldTag, nextHeldStamp(), rand.Uint32(), heldTagOf(name))
}

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

// heldTagOf returns the tag that a moved-aside entry of name carries.
func heldTagOf(name string) string {
	if len(asidePrefix)+heldStamp+heldRand+1+len(name) <= names.MaxElement {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "#" + hex.EncodeToString(sum[:16])
}

// parseHeld returns the tag and the stamp (which orders copies of one tag,
// oldest first, as strings) of a moved-aside entry that records its ID.
func parseHeld(entry string) (tag, stamp string, ok bool) {
	rest, found := strings.CutPrefix(entry, asidePrefix)
	n := heldStamp + heldRand
	if !found || len(rest) < n+2 || rest[n] != '-' || !isLowerHex(rest[:n]) {
		return "", "", false
	}
	return rest[n+1:], rest[:n], true
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// A restoration is the set of moved-aside copies a Prune puts back.
type restoration struct {
	from map[string]string // moved-aside entry -> the ID's directory name
	to   map[string]bool   // the directory names restored
}

// strandedCopies picks, among the entries of Root, the moved-aside copy to
// restore for each ID in keep whose path holds no directory: the newest
// copy that records its directory name. Every other moved-aside copy that
// records an ID is garbage: its ID's path holds a newer publication, or the
// ID is not kept, or a newer copy is restored.
func strandedCopies(entries []os.DirEntry, keep map[string]bool) restoration {
	if len(keep) == 0 {
		return restoration{}
	}
	var byTag map[string]string   // tag -> directory name of a kept ID, made at the first copy
	newest := map[string]string{} // directory name -> entry
	for _, e := range entries {
		tag, stamp, ok := parseHeld(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		if byTag == nil {
			byTag = make(map[string]string, len(keep))
			for name := range keep {
				byTag[heldTagOf(name)] = name
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
		return restoration{}
	}
	for _, e := range entries {
		if e.IsDir() {
			delete(newest, e.Name()) // the path is full: no restoration
		}
	}
	r := restoration{from: make(map[string]string, len(newest)), to: make(map[string]bool, len(newest))}
	for name, e := range newest {
		r.from[e] = name
		r.to[name] = true
	}
	return r
}

func stampOf(entry string) string {
	_, stamp, _ := parseHeld(entry)
	return stamp
}
