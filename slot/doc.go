// Package slot holds one current value keyed on an ordered key (a
// generation, a sequence number) and leases the key of whatever a reader
// reads, so that the owner of per-key resources can tell which keys readers
// still use.
//
// [Slot.Lease] reads the held value and leases its key in one atomic step:
// a lease that races [Slot.Set] either gets the old key, which then appears
// in every [Slot.Leased] that begins after Set returned until the lease is
// released, or gets the new key. Replacing or clearing the value never
// cancels a lease; the reader finishes against the value it started with.
// Keys of replaced values that are still leased are counted by a
// [lease.Counter]. [Slot.LeasedValues] makes the same promise per value,
// so that two values stored under one key are told apart, and
// [Slot.Freed] signals the release of a replaced value's last lease. [Slot.ReportLeaks] reports leases dropped without
// Release, as the Counter's does.
//
// Keys are compared with == and <. A floating-point NaN is neither equal to
// nor ordered against any key, so it cannot be a key: [Slot.Set] and
// [Slot.SetIfNewer] panic on NaN and leave the slot unchanged. -0.0 and
// +0.0 are equal, so they are one key.
//
// A Slot is safe for concurrent use by multiple goroutines without
// additional locking or coordination. Leasing and releasing the current
// value take no lock.
package slot
