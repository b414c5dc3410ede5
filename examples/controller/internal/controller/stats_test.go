package controller_test

import "leasekit.dev/platform"

// onDisk returns the generations with a directory on disk, ascending.
func onDisk(st platform.Stats) []int64 {
	var gens []int64
	for _, d := range st.Dirs { // by generation
		if len(gens) == 0 || gens[len(gens)-1] != d.Identity.Key {
			gens = append(gens, d.Identity.Key)
		}
	}
	return gens
}

// leaseCounts returns the outstanding leases per generation.
func leaseCounts(st platform.Stats) map[int64]int {
	n := map[int64]int{}
	for _, d := range st.Dirs {
		if d.Leases > 0 {
			n[d.Identity.Key] += d.Leases
		}
	}
	return n
}
