//go:build !linux

package isolate

import "syscall"

// limitData sets no limit: outside Linux, the operating system's data
// limit is not enforced for mapped memory, or not offered.
func limitData(budget int64) {}

// workerAttr is how a worker process is started.
func workerAttr() *syscall.SysProcAttr { return nil }

// residentMemory reports that a process's resident memory cannot be read:
// outside Linux, the parent does not watch a worker's memory, which the
// worker watches itself.
func residentMemory(pid int) (int64, bool) { return 0, false }
