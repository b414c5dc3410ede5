package demo

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"leasekit.dev/platform/kernel"
)

// renderKey identifies what a render rendered: one instance against one
// generation's platform files.
type renderKey struct {
	generation int64
	platform   digest // the platform directory's digest, taken at lease
	instance   string
}

// renderDigest returns a digest of a render's outcome: its resources and
// diagnostics, or its error's text.
func renderDigest(out kernel.RenderOutput, err error) digest {
	h := sha256.New()
	if err != nil {
		fmt.Fprintf(h, "error\x00%s", err)
	} else if jerr := json.NewEncoder(h).Encode(out); jerr != nil {
		fmt.Fprintf(h, "unencodable\x00%s", jerr)
	}
	var d digest
	h.Sum(d[:0])
	return d
}

// maxRemembered bounds the render outcomes a consistency remembers.
const maxRemembered = 512

// A consistency remembers the outcome of each renderKey it is shown and
// reports a render whose outcome differs from an earlier render of the
// same key: the kernel retains nothing between renders, so concurrent
// renders of the same instance against the same files must agree byte for
// byte. Its memory is bounded: past maxRemembered keys it forgets all but
// the newest generations'. The zero value is ready to use; it is not safe
// for concurrent use.
type consistency struct {
	seen   map[renderKey]digest
	newest int64
}

// check records d as k's outcome and reports whether it agrees with the
// outcome remembered for k, if any.
func (c *consistency) check(k renderKey, d digest) bool {
	if c.seen == nil {
		c.seen = map[renderKey]digest{}
	}
	if prev, ok := c.seen[k]; ok {
		return prev == d
	}
	c.seen[k] = d
	c.newest = max(c.newest, k.generation)
	if len(c.seen) > maxRemembered {
		for old := range c.seen {
			if old.generation < c.newest-2 {
				delete(c.seen, old)
			}
		}
	}
	return true
}
