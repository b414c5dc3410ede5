// Package isolate runs the CUE evaluation of a [kernel.Kernel] in worker
// processes, so that it can be stopped.
//
// CUE's evaluator cannot be cancelled, and a few bytes of CUE can take it
// minutes and gigabytes. [Workers] wraps a Kernel and offers its three
// verbs, BuildPlatform, ReadInstance and Render, with the Kernel's results
// and errors (a differential test holds them equal, positions included).
// Each build and render runs in a worker process, the running executable
// started again, whose main (or TestMain) calls [Main] first: when the
// call's ctx ends the worker is killed and the call returns ctx.Err() at
// once; past the time or memory budget it is killed and the call fails
// with a [*BudgetError]. A worker acknowledges a call once it has read
// the call's request whole, before it evaluates anything: one that ends
// before (killed while idle, as the OOM killer does) never started the
// call, which runs on another worker. A worker that cannot start, ends
// after its acknowledgement but before it answers, or answers in a frame
// the pool cannot read fails the call with a [*WorkerError]. The worker
// reads the platform's directory itself, under the Kernel's rules and
// Limits; the instance is read in the caller's process and sent.
//
// What crosses between processes travels as the kernel encodes it: a
// Platform and an InstanceSnapshot in JSON, an error by
// [kernel.EncodeError], a rendered output by
// [kernel.RenderOutput.MarshalBinary].
package isolate
