package slot

import "cmp"

// errNaN is the panic value of a Set or SetIfNewer on NaN.
const errNaN = "slot: key is NaN; NaN is not a valid key"

// isNaN reports whether k is a floating-point NaN, the only value of a
// [cmp.Ordered] type that is not equal to itself. For an integer or string K
// the comparison is constant false and costs nothing.
func isNaN[K cmp.Ordered](k K) bool {
	return k != k
}
