// Package isolate runs the CUE evaluation of a [kernel.Kernel] in worker
// processes, so that it can be stopped: CUE's evaluator cannot be
// cancelled, and a few bytes of CUE can take it minutes and gigabytes.
//
// A call of [Workers], BuildPlatform or Render, promises:
//
//   - the Kernel's result and errors, positions included (a differential
//     test holds them equal); ReadInstance evaluates nothing and runs in
//     the caller's process;
//   - a worker of its own for its duration, waited for as long as ctx
//     allows; when ctx ends, the worker is killed and the call returns
//     ctx.Err() at once;
//   - past the time budget (Workers.Timeout) or the memory budget
//     (Workers.Memory), the worker is killed and the call fails with a
//     [*BudgetError];
//   - a worker that ends before it has acknowledged the call's request
//     (killed while idle, as the OOM killer does) never started the call:
//     it is replaced and the call runs on another (Size+3 workers in all
//     at most, the last of which fails the call as the next case does);
//   - a worker that cannot start, ends after its acknowledgement but
//     before it answers, or answers in a frame the pool cannot read is
//     killed and fails the call with a [*WorkerError];
//   - after [Workers.Close], which kills every worker and returns once
//     each has ended, a call fails with a *WorkerError wrapping
//     [ErrClosed].
//
// A failed call leaves nothing behind: its worker is gone, the next call
// gets another, the other workers are untouched. A worker is the running
// executable started again, whose main (or TestMain) calls [Main] first;
// it reads the platform's directory itself, under the Kernel's rules and
// Limits, and is sent the instance, read in the caller's process. Its
// answers are not trusted: a rendered output comes as
// [kernel.RenderOutput.MarshalBinary] encodes it and is decoded by
// UnmarshalBinary, which checks every count against the bytes there are;
// an error comes as [kernel.EncodeError] encodes it.
package isolate
