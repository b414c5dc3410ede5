package isolate

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// limitData sets the process's RLIMIT_DATA, which bounds its writable
// private mappings (the Go heap among them), to twice budget and 256 MiB
// more: a backstop for memory allocated faster than it is watched, far
// enough above the budget for the runtime's mappings, which outgrow its
// resident memory. RLIMIT_AS would bound address space the Go runtime
// reserves without using.
func limitData(budget int64) {
	lim := uint64(2*budget + 256<<20)
	syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: lim, Max: lim})
}

// workerAttr is how a worker process is started: it is killed if the
// thread that started it ends, as it does when the parent process ends.
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// residentMemory returns the anonymous resident memory of process pid,
// in bytes (resident less file-backed and shared pages), and whether it
// could be read.
func residentMemory(pid int) (int64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return 0, false
	}
	resident, err1 := strconv.ParseInt(f[1], 10, 64)
	shared, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (resident - shared) * int64(os.Getpagesize()), true
}
