package slot_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/anishathalye/porcupine"
	"leasekit.dev/slot"
)

// The operations of the concurrent history, as recorded for porcupine.
type opKind int

const (
	opSet opKind = iota
	opSetIfNewer
	opClear
	opGet
	opLease
	opRelease
	opLeased
	opSetNaN // a Set refused with a panic: changes nothing
)

type opInput struct {
	kind opKind
	key  float64 // Set, SetIfNewer
	id   int     // Lease, Release: the lease's identity
}

type opOutput struct {
	key    float64 // Get, Lease: the key read
	value  string  // Get, Lease: the value read
	ok     bool    // Get, Lease, SetIfNewer; SetNaN: it panicked as documented
	leased string  // Leased: the keys, comma-separated
}

// slotState is the sequential model's state: what is held and which lease
// holds which key. It is comparable, as porcupine requires.
type slotState struct {
	has  bool
	key  float64
	held string // sorted "id:key," pairs of the outstanding leases
}

func (s slotState) holders() map[int]float64 {
	m := map[int]float64{}
	for _, p := range strings.Split(s.held, ",") {
		if p == "" {
			continue
		}
		id, k, _ := strings.Cut(p, ":")
		i, _ := strconv.Atoi(id)
		m[i], _ = strconv.ParseFloat(k, 64)
	}
	return m
}

func encodeHolders(m map[int]float64) string {
	ids := make([]int, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%d:%s,", id, formatKey(m[id]))
	}
	return b.String()
}

func leasedKeys(m map[int]float64) string {
	var keys []float64
	for _, k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	return joinKeys(keys)
}

// formatKey formats k exactly, -0 as 0: they are one key.
func formatKey(k float64) string {
	if k == 0 {
		k = 0
	}
	return strconv.FormatFloat(k, 'g', -1, 64)
}

func joinKeys(keys []float64) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = formatKey(k)
	}
	return strings.Join(s, ",")
}

// linKeys are the keys the clients set: the signed zeros (one key), an
// infinity and the extremes of float64 among small values.
var linKeys = []float64{0, math.Copysign(0, -1), 1, 2, math.Inf(1), -math.MaxFloat64}

var slotModel = porcupine.Model{
	Init: func() any { return slotState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(slotState), input.(opInput), output.(opOutput)
		switch in.kind {
		case opSet:
			s.has, s.key = true, in.key
			return true, s
		case opSetIfNewer:
			stores := !s.has || in.key > s.key
			if stores {
				s.has, s.key = true, in.key
			}
			return out.ok == stores, s
		case opClear:
			s.has = false
			return true, s
		case opGet:
			if !s.has {
				return !out.ok, s
			}
			return out.ok && out.key == s.key && out.value == value(s.key), s
		case opLease:
			if !s.has {
				return !out.ok, s
			}
			if !out.ok || out.key != s.key || out.value != value(s.key) {
				return false, s
			}
			m := s.holders()
			m[in.id] = s.key
			s.held = encodeHolders(m)
			return true, s
		case opRelease:
			m := s.holders()
			delete(m, in.id)
			s.held = encodeHolders(m)
			return true, s
		case opLeased:
			return out.leased == leasedKeys(s.holders()), s
		case opSetNaN:
			return out.ok, s
		}
		panic("unknown operation")
	},
	DescribeOperation: func(input, output any) string {
		return fmt.Sprintf("%+v -> %+v", input, output)
	},
}

// TestSlotLinearizable runs Set, SetIfNewer, Clear, Get, Lease, Release and
// Leased from several goroutines at once and checks each recorded history
// for linearizability against the sequential model. Keys are float64 with
// the signed zeros, an infinity and an extreme; some Sets are of NaN, which
// must panic and change nothing while the others run.
func TestSlotLinearizable(t *testing.T) {
	const (
		rounds  = 200
		clients = 4
		ops     = 24
	)
	for round := range rounds {
		var (
			s       slot.Slot[float64, string]
			clock   atomic.Int64
			mu      sync.Mutex
			history []porcupine.Operation
			nextID  atomic.Int64
			wg      sync.WaitGroup
		)
		record := func(client int, in opInput, do func() opOutput) {
			call := clock.Add(1)
			out := do()
			ret := clock.Add(1)
			mu.Lock()
			history = append(history, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
			mu.Unlock()
		}
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []struct {
					l  *slot.Lease[float64, string]
					id int
				}
				seed := uint64(round*clients + c + 1)
				for i := range ops {
					seed = seed*6364136223846793005 + 1442695040888963407
					r := int(seed >> 33)
					switch r % 9 {
					case 0:
						if i%5 == 4 {
							record(c, opInput{kind: opSetNaN}, func() opOutput {
								return opOutput{ok: panicValue(func() { s.Set(math.NaN(), "nan") }) == nanPanic}
							})
							continue
						}
						k := linKeys[r/9%len(linKeys)]
						record(c, opInput{kind: opSet, key: k}, func() opOutput { s.Set(k, value(k)); return opOutput{} })
					case 1:
						k := linKeys[r/9%len(linKeys)]
						record(c, opInput{kind: opSetIfNewer, key: k}, func() opOutput { return opOutput{ok: s.SetIfNewer(k, value(k))} })
					case 2:
						if i%4 == 0 {
							record(c, opInput{kind: opClear}, func() opOutput { s.Clear(); return opOutput{} })
						}
					case 3:
						record(c, opInput{kind: opGet}, func() opOutput {
							k, v, ok := s.Get()
							return opOutput{key: k, value: v, ok: ok}
						})
					case 4, 5:
						id := int(nextID.Add(1))
						var l *slot.Lease[float64, string]
						record(c, opInput{kind: opLease, id: id}, func() opOutput {
							var ok bool
							l, ok = s.Lease()
							if !ok {
								return opOutput{}
							}
							return opOutput{key: l.Key(), value: l.Value(), ok: true}
						})
						if l != nil {
							mine = append(mine, struct {
								l  *slot.Lease[float64, string]
								id int
							}{l, id})
						}
					case 6, 7:
						if len(mine) == 0 {
							continue
						}
						j := r / 9 % len(mine)
						m := mine[j]
						mine = slices.Delete(mine, j, j+1)
						record(c, opInput{kind: opRelease, id: m.id}, func() opOutput { m.l.Release(); return opOutput{} })
						m.l.Release() // a repeated release changes nothing
					case 8:
						record(c, opInput{kind: opLeased}, func() opOutput { return opOutput{leased: joinKeys(s.Leased())} })
					}
				}
				for _, m := range mine {
					record(c, opInput{kind: opRelease, id: m.id}, func() opOutput { m.l.Release(); return opOutput{} })
				}
			}()
		}
		wg.Wait()
		if !porcupine.CheckOperations(slotModel, history) {
			t.Fatalf("round %d: the history of %d operations is not linearizable", round, len(history))
		}
		if got := s.Leased(); got != nil {
			t.Fatalf("round %d: Leased() = %v after every lease was released", round, got)
		}
	}
}
