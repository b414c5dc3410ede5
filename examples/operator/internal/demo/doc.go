// Package demo is the operator example's machinery: a deterministic
// stream of platform generations ([Stream]), the embedded instance modules
// ([Instances]), a pool of concurrent renders that lease the store ([Pool]),
// a [Checker] that watches every lease and the platform directory from the
// outside, a [StatusLine] and the run that ties them together ([Run]),
// returning a [Summary].
//
// A Checker and a Pool are safe for concurrent use by multiple goroutines;
// a Stream, a StatusLine and a Histogram are not. Run starts and ends
// every goroutine it uses: when it returns, nothing of it is left running
// and every lease it took is released.
package demo
