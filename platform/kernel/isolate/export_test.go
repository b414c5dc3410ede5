package isolate

import (
	"bufio"
	"os"
)

// GarbageEnv, set in a worker's environment, makes MainGarbage serve it: it
// says hello, reads one request and answers with a frame that is not one
// the pool can read, then stays alive without a word more.
const GarbageEnv = "ISOLATE_TEST_GARBAGE"

// MainGarbage is Main for a worker started with GarbageEnv set.
func MainGarbage() {
	if _, ok := os.LookupEnv(workerEnv); !ok || os.Getenv(GarbageEnv) == "" {
		return
	}
	r, w := bufio.NewReader(os.Stdin), bufio.NewWriter(os.Stdout)
	w.WriteString(workerHello)
	w.Flush()
	if _, err := readPayload(r, 1<<30); err != nil {
		os.Exit(1)
	}
	writePayload(w, []byte("{not json"))
	w.Flush()
	select {}
}
