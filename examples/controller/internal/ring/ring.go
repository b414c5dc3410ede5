// Package ring splits a hash space among the live members of a ring and
// hands a part over from one member to another without two members ever
// writing for the same hash. It knows nothing of Kubernetes: members are
// identities, the hashes are [Hash] of an object's UID, the 64-bit FNV-1a
// the API server's shardRange compares.
//
// Each live member has a target: [Targets] cuts the space into as many
// contiguous parts as there are live members, in the order of their
// identities, so any member computes every member's target from the same
// list of identities, and there are no shard numbers to configure.
//
// A member writes only for the hashes it has claimed and validated.
// Every member publishes its claim (in its Lease). [Plan] says what a
// member does next: it stops writing for what left its target at once,
// and publishes its smaller claim only once its writes in flight there
// have ended ([Gate.Drain]); it may take what is in its target and
// claimed by no other live member. A take is published first, then
// validated against every other claim read afterwards, from a read that
// sees every write before it ([Validate]): of two members taking the same
// hash, the later publisher sees the earlier's claim and withdraws, and
// the earlier may withdraw too, never both keep. A member whose claim is
// not renewed for a lease duration is no longer live, and its claim no
// longer counts; it stopped writing itself a margin before ([Gate]'s
// deadline).
package ring

import (
	"math/bits"
	"slices"
)

// Targets returns the target of each of ids (duplicates counted once): the
// space cut into len(ids) contiguous parts of equal size (give or take
// one hash), the first to the least identity in byte order. Any ids
// covers the space exactly once; no ids, an empty map.
func Targets(ids []string) map[string]Set {
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
		lo := start(uint64(i))
		hi := ^uint64(0)
		if uint64(i)+1 < n {
			hi = start(uint64(i)+1) - 1
		}
		out[id] = Set{{lo, hi}}
	}
	return out
}

// A Peer is another member as seen: its identity and the claim it
// published.
type Peer struct {
	ID    string
	Claim Set
}

// Claimed returns the union of the peers' claims.
func Claimed(peers []Peer) Set {
	var all Set
	for _, p := range peers {
		all = all.Union(p.Claim)
	}
	return all
}

// Plan returns what member id does next, given the identities of the
// live members (id is counted among them whether listed or not), its
// published claim, the part of it it writes for, and its live peers with
// their claims as last seen: its target; stop, what it writes for outside
// its target (it stops at once, and publishes its claim without it once
// its writes there in flight have ended); and take, what it may claim:
// in its target, in neither its claim nor any peer's.
func Plan(id string, live []string, claim, writing Set, peers []Peer) (target, stop, take Set) {
	target = Targets(append(slices.Clone(live), id))[id]
	stop = writing.Minus(target)
	take = target.Minus(claim).Minus(Claimed(peers))
	return target, stop, take
}

// Validate returns the part of take, published as claimed, that a member
// may write for: take less every claim of the peers read after its claim
// was published, by a read that sees every write before it. A peer to
// count is any whose Lease is not known expired (a Lease renewed since it
// was last seen counts, whatever was seen before).
func Validate(take Set, peers []Peer) Set { return take.Minus(Claimed(peers)) }
