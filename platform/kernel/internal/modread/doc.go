// Package modread reads an untrusted CUE module's files, under limits,
// for the kernel: through an [os.Root] or from memory ([Source]), as the
// CUE loader asks for them ([FS]) or whole ([ReadPlain]), each file read
// once, bounded in size, count and nesting ([Depth]), and hashed
// ([Digest]). Input past a limit is refused with a [*LimitError], a file
// the kernel does not read with a [*FileError]; both are the kernel's
// errors, and say "kernel:".
package modread

// Limits bounds what a read of one module takes: the fields of the
// kernel's Limits that bound files, each resolved (none zero).
type Limits struct {
	MaxFileSize  int64 // the most bytes of one file
	MaxTotalSize int64 // the most bytes of all the files read
	MaxFiles     int   // the most files read, and entries one directory lists
	MaxDepth     int   // the deepest nesting of a CUE or JSON file; see Depth
}

// A Module is the files of a module read whole, by slash-separated path,
// their total size and their Digest.
type Module struct {
	Files  map[string][]byte
	Size   int64
	Digest string
}
