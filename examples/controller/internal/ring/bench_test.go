package ring

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"slices"
	"testing"
)

// BenchmarkAssign measures Assign beside two baselines, each over the
// fleet of TestRingFleet (reported: the worst share moved past 1/N, the
// worst largest share over the mean, the most ranges of a target) and
// for one call at 100 members that claim their targets (ns/op, allocs):
// contiguous, the equal contiguous cut in identity order the ring had
// before; virtual-nodes-128, a stateless consistent hash with 128
// points per member.
func BenchmarkAssign(b *testing.B) {
	for _, a := range []struct {
		name   string
		assign func([]string, map[string]Set) map[string]Set
	}{
		{"sticky", Assign},
		{"contiguous", contiguous},
		{"virtual-nodes-128", virtualNodes},
	} {
		w := runFleet(a.assign, func(fleetEvent) {}) // once: b.Run runs its function again as b.N grows
		b.Run(a.name, func(b *testing.B) {
			ids := make([]string, fleetMembers)
			for i := range ids {
				ids[i] = fmt.Sprintf("ring-%d", i)
			}
			claims := a.assign(ids, nil)
			b.ReportAllocs()
			for b.Loop() {
				a.assign(ids, claims)
			}
			b.ReportMetric(w.over, "moved_over_ideal_max")
			b.ReportMetric(w.share, "share_max/mean")
			b.ReportMetric(float64(w.ranges), "ranges_max")
		})
	}
}

// contiguous is the ring's assignment before Assign: the space cut into
// len(ids) contiguous parts of equal size, in identity order.
func contiguous(ids []string, _ map[string]Set) map[string]Set {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	n := uint64(len(ids))
	out := make(map[string]Set, n)
	start := func(i uint64) uint64 {
		q, _ := bits.Div64(i, 0, n) // i·2^64 / n, i < n
		return q
	}
	for i, id := range ids {
		lo, hi := start(uint64(i)), uint64(math.MaxUint64)
		if uint64(i)+1 < n {
			hi = start(uint64(i)+1) - 1
		}
		out[id] = Set{{lo, hi}}
	}
	return out
}

// mix is splitmix64's finalizer: FNV-1a spreads a change in its last
// bytes over the low bits only.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// virtualNodes gives each member 128 points on the ring of hashes, and
// each hash to the member of the first point at or after it.
func virtualNodes(ids []string, _ map[string]Set) map[string]Set {
	type point struct {
		at uint64
		id string
	}
	var points []point
	for _, id := range ids {
		for i := range 128 {
			h := fnv.New64a()
			h.Write([]byte(id))
			h.Write(binary.BigEndian.AppendUint64(nil, uint64(i)))
			points = append(points, point{mix(h.Sum64()), id})
		}
	}
	slices.SortFunc(points, func(a, b point) int { return cmp.Compare(a.at, b.at) })
	spans := map[string][]Span{}
	lo := uint64(0)
	for _, p := range points {
		spans[p.id] = append(spans[p.id], Span{lo, p.at})
		if p.at == math.MaxUint64 {
			break
		}
		lo = p.at + 1
	}
	if len(points) > 0 && points[len(points)-1].at < math.MaxUint64 {
		first := points[0].id
		spans[first] = append(spans[first], Span{points[len(points)-1].at + 1, math.MaxUint64})
	}
	out := make(map[string]Set, len(ids))
	for _, id := range ids {
		out[id] = Of(spans[id]...)
	}
	return out
}
