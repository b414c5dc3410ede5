package baseline

import (
	"os"
	"testing"
)

// TestKernelSchemaIsTheKernels: the naive kernel's copies of the CUE
// vocabulary are the kernel's own, byte for byte.
func TestKernelSchemaIsTheKernels(t *testing.T) {
	for copied, original := range map[string]string{
		kernelSchema: "../../platform/kernel/schema.cue",
		kernelRender: "../../platform/kernel/render.cue",
	} {
		want, err := os.ReadFile(original)
		if err != nil {
			t.Fatal(err)
		}
		if copied != string(want) {
			t.Errorf("the copy of %s differs from it: copy it again", original)
		}
	}
}
