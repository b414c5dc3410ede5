// Package ring splits a hash space among the live members of a ring and
// hands a part over from one member to another without two members ever
// writing for the same hash. It knows nothing of Kubernetes: members are
// identities, the hashes are [Hash] of an object's UID, the 64-bit FNV-1a
// the API server's shardRange compares.
//
// Each live member has a target: [Assign] deals the space, cut into
// [Units] equal parts, among the live members from the claims they
// publish, stickily: a member keeps what it claims up to its quota, and
// what nobody keeps goes to the members short of theirs. So any member
// computes every member's target from the live identities and their
// claims, there are no shard numbers to configure, and a join or a leave
// among N members moves 1/N of the space and nothing else (give or take
// a part, 1/512). The largest share is within one part of the mean (1.17
// times it at 100 members, 1.07 at 50), and a target is a few runs of
// parts: TestRingFleet, run in CI, takes a fleet of 1 to 100 members
// through 1,000 joins, leaves and expiries, and holds every change to
// 1/N + 2% moved, the largest share to 1.25 times the mean, and every
// target to 128 ranges; the worst it sees is 0.2% past 1/N, 1.17 and 58.
//
// Why sticky, not a function of the live identities alone: such a
// function that moves only the changed member's share gives each hash to
// its most preferred live member (rendezvous hashing, virtual nodes on a
// ring), so the shares are as uneven as independent draws, and the leave
// of the largest moves more than its 1/N. With 128 virtual nodes per
// member, the same fleet moves up to 7.3% past 1/N on one change (at 2
// to 3 members, a share is 1/N ± 3%), its largest share is 1.40 times
// the mean, and a target has 129 ranges (BenchmarkAssign measures both
// beside the cut in identity order the ring had before, which moved 49%
// past 1/N); an even split that way needs thousands of points, each a
// range of the selector. Evening the shares out after the draw (quotas
// over rendezvous hashing, Maglev's table) moved 4% to 13% past 1/N in a
// simulation of the same fleet. The claims every member publishes
// already are the state that makes the split even and the moves minimal.
// Members whose Lease caches disagree may compute different targets for
// a while; the handover below keeps that safe, and the targets agree
// again once the caches do.
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
	"cmp"
	"math/bits"
	"slices"
)

// Units is the number of equal parts the hash space is cut into for
// rings of up to 128 members: every target is a union of them. For a
// larger ring the parts are halved as often as it takes to give each
// member at least four (see [Assign]); halving moves nothing, but a ring
// that shrinks back to 128 deals again every part its members hold only
// halves of, once.
const Units = 512

// units returns the number of equal parts for a ring of n members: a
// power of two, Units or more, at least 4n.
func units(n int) int {
	u := Units
	for u < 4*n {
		u *= 2
	}
	return u
}

// Targets returns the target of each of ids (duplicates counted once)
// when no member claims anything: [Assign] with no claims, the space cut
// into len(ids) contiguous runs of whole parts, the first to the least
// identity in byte order. Any ids covers the space exactly once; no ids,
// an empty map.
func Targets(ids []string) map[string]Set { return Assign(ids, nil) }

// Assign returns the target of each of ids (duplicates counted once),
// given what each claims now, stickily, as Kafka's cooperative sticky
// assignor deals partitions: a join or a leave moves only the share that
// must move.
//
// The space is cut into [Units] equal parts (more past 128 members). A
// member owns the parts wholly inside its claim (a part two claim goes
// to the one claiming fewer parts, then to the least identity); a claim
// of another cut, an earlier version's or a hand-made one, counts for
// the parts wholly inside it. Each member's quota is the number of parts
// over the number of members; the remainder's parts go to the members
// owning more than the quotient, then to the others, in identity order.
// A member keeps its owned parts up to its quota, its longest runs
// first; the parts nobody keeps are dealt in the order of the space to
// the members short of their quota, in identity order.
//
// The targets cover the space exactly once, and they are a fixed point
// (claimed as they are, they stay). They stay the same while a handover
// runs: a member that publishes the smaller claim it was given, or takes
// part of what it was given, changes no target. Assign is a pure
// function, safe to call from any goroutine.
func Assign(ids []string, claims map[string]Set) map[string]Set {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	n := len(ids)
	out := make(map[string]Set, n)
	if n == 0 {
		return out
	}
	u := units(n)
	shift := uint(64 - bits.TrailingZeros(uint(u)))
	// owned[m]: the parts wholly inside member m's claim.
	owned := make([][]bool, n)
	size := make([]int, n)
	for m, id := range ids {
		owned[m] = make([]bool, u)
		for _, sp := range claims[id] {
			lo, end := wholeParts(sp, shift)
			for p := lo; p < end; p++ {
				owned[m][p] = true
				size[m]++
			}
		}
	}
	owner := make([]int, u)
	for p := range owner {
		owner[p] = -1
		for m := range ids {
			if owned[m][p] && (owner[p] < 0 || size[m] < size[owner[p]]) {
				owner[p] = m
			}
		}
	}
	count := make([]int, n)
	for _, m := range owner {
		if m >= 0 {
			count[m]++
		}
	}
	// The remainder's parts go to the members that own more than the
	// quotient, then to the others, each in identity order: a member
	// that takes or gives up to its quota never moves another's.
	q, r := u/n, u%n
	order := make([]int, n)
	for m := range order {
		order[m] = m
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(b2i(count[b] > q), b2i(count[a] > q))
	})
	quota := make([]int, n)
	for k, m := range order {
		quota[m] = q + b2i(k < r)
	}
	kept := make([]int, n)
	for m := range ids {
		runs := partRuns(owner, m)
		slices.SortStableFunc(runs, func(a, b [2]int) int { return (b[1] - b[0]) - (a[1] - a[0]) })
		left := quota[m]
		for _, r := range runs {
			for p := r[0]; p < r[1]; p++ {
				if left > 0 {
					left--
					continue
				}
				owner[p] = -1
			}
		}
		kept[m] = quota[m] - left
	}
	p := 0
	for m := range ids {
		for d := quota[m] - kept[m]; d > 0; d-- {
			for owner[p] >= 0 {
				p++
			}
			owner[p] = m
		}
	}
	for m, id := range ids {
		var s Set
		for _, r := range partRuns(owner, m) {
			s = append(s, Span{uint64(r[0]) << shift, uint64(r[1])<<shift - 1})
		}
		out[id] = s
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// wholeParts returns the parts [lo, end) wholly inside sp, for parts of
// 2^shift hashes.
func wholeParts(sp Span, shift uint) (lo, end int) {
	mask := uint64(1)<<shift - 1
	l, e := sp.Lo>>shift, sp.Hi>>shift
	if sp.Lo&mask != 0 {
		l++
	}
	if sp.Hi&mask == mask {
		e++
	}
	return int(l), int(e)
}

// partRuns returns the runs [start, end) of consecutive parts owner
// gives to m, in order.
func partRuns(owner []int, m int) [][2]int {
	var runs [][2]int
	for p := 0; p < len(owner); p++ {
		if owner[p] != m {
			continue
		}
		e := p
		for e < len(owner) && owner[e] == m {
			e++
		}
		runs = append(runs, [2]int{p, e})
		p = e
	}
	return runs
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
// their claims as last seen: its target ([Assign] of the live members
// and their claims); stop, what it writes for outside
// its target (it stops at once, and publishes its claim without it once
// its writes there in flight have ended); and take, what it may claim:
// in its target, in neither its claim nor any peer's.
func Plan(id string, live []string, claim, writing Set, peers []Peer) (target, stop, take Set) {
	claims := make(map[string]Set, len(peers)+1)
	for _, p := range peers {
		claims[p.ID] = p.Claim
	}
	claims[id] = claim
	target = Assign(append(slices.Clone(live), id), claims)[id]
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
