package isolate

import (
	"bufio"
	"os"
	"time"
)

// GarbageEnv, set in a worker's environment, makes MainGarbage serve it: it
// says hello, reads one request and answers with a frame that is not one
// the pool can read, then stays alive without a word more.
const GarbageEnv = "ISOLATE_TEST_GARBAGE"

// SlowMemoryExitEnv, set in a worker's environment, makes MainGarbage
// serve it as a worker past its memory budget whose exit is slow: it says
// hello, reads one request, closes its output, and exits as a worker past
// its budget does only after the value of the variable, a duration.
const SlowMemoryExitEnv = "ISOLATE_TEST_SLOW_MEMORY_EXIT"

// MainGarbage is Main for a worker started with GarbageEnv or
// SlowMemoryExitEnv set.
func MainGarbage() {
	if _, ok := os.LookupEnv(workerEnv); !ok {
		return
	}
	slow, err := time.ParseDuration(os.Getenv(SlowMemoryExitEnv))
	if os.Getenv(GarbageEnv) == "" && err != nil {
		return
	}
	r, w := bufio.NewReader(os.Stdin), bufio.NewWriter(os.Stdout)
	w.WriteString(workerHello)
	w.Flush()
	if _, err := readPayload(r, 1<<30); err != nil {
		os.Exit(1)
	}
	if err == nil {
		os.Stdout.Close()
		time.Sleep(slow)
		os.Exit(exitMemory)
	}
	writePayload(w, []byte("{not json"))
	w.Flush()
	select {}
}
