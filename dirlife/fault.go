package dirlife

// The steps of a Write, as named to the fault seam.
const (
	stepMkdir    = "mkdir"    // a directory in the staging tree, or the staging directory
	stepCreate   = "create"   // a file in the staging tree
	stepWrite    = "write"    // a file's contents
	stepSync     = "sync"     // a file's fsync
	stepSyncDir  = "syncdir"  // a staging directory's fsync
	stepSyncRoot = "syncroot" // the root's fsync after publication
	stepExchange = "exchange" // renameat2 RENAME_EXCHANGE of staging and target
	stepRename   = "rename"   // any rename: publication, move-aside, moving back
	stepRemove   = "remove"   // handing a replaced copy to the remover, or removing a failed staging tree
)

// faultFunc is the unexported test seam: when set on a Layout, it is called
// before each step of a Write with the step and the root-relative name it
// acts on, and a non-nil result is used as that step's error instead of
// performing it.
type faultFunc func(step, name string) error

func (l Layout[ID]) fault(step, name string) error {
	if l.faults == nil {
		return nil
	}
	return l.faults(step, name)
}
