//go:build !unix

package bench

func settle() {}
