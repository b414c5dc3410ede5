package modread

import "fmt"

// A FileError reports a file or directory in a module that the kernel
// refuses to read: one that is not a regular file or directory, a
// symbolic link leading out of the module, or a directory of vendored
// packages. It is returned as it is, and nothing of the module is
// evaluated.
type FileError struct {
	Dir  string // the module's directory, "instance" for an instance's Files
	File string // the file or directory, slash-separated, relative to Dir
	Rule string // why it is refused: "is a named pipe (p---------), not a regular file", …
	Err  error  // the underlying error, if any
}

// Error names the module, the file and the rule.
func (e *FileError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("kernel: %s %s: %v", inModule(e.Dir, e.File), e.Rule, e.Err)
	}
	return fmt.Sprintf("kernel: %s %s", inModule(e.Dir, e.File), e.Rule)
}

// inModule names file, relative to the module directory dir, as an error
// shows it: "dir: file", or dir alone for the module itself.
func inModule(dir, file string) string {
	switch {
	case dir == "":
		return file
	case file == "":
		return dir
	}
	return dir + ": " + file
}

// Unwrap returns the underlying error.
func (e *FileError) Unwrap() error { return e.Err }

// A LimitError reports input past one of a Kernel's Limits. It is returned
// as it is, before the offending input is parsed or evaluated.
type LimitError struct {
	Limit string // the field of Limits: "MaxDepth", "MaxFileSize", ...
	Dir   string // the module's directory, "instance" for an instance's Files
	File  string // the file or directory past the limit, slash-separated, relative to Dir; "" for the module itself

	// Value is what the input reached: the file's size, the total size,
	// the number of files, entries or components. For MaxDepth the scan
	// stops at the first level past the limit, so Value is Max+1.
	Value int64
	Max   int64 // the limit in force
}

// Error names the limit, the file and both values.
func (e *LimitError) Error() string {
	what := map[string]string{
		"MaxFileSize":   "holds %d bytes, more than the limit of %d (Limits.MaxFileSize)",
		"MaxTotalSize":  "brings the module to %d bytes, more than the limit of %d (Limits.MaxTotalSize)",
		"MaxFiles":      "makes %d files or entries, more than the limit of %d (Limits.MaxFiles)",
		"MaxDepth":      "nests %d levels deep, more than the limit of %d (Limits.MaxDepth)",
		"MaxComponents": "holds %d components, more than the limit of %d (Limits.MaxComponents)",
	}[e.Limit]
	if what == "" {
		what = "reaches %d, more than the limit of %d (Limits." + e.Limit + ")"
	}
	return fmt.Sprintf("kernel: %s "+what, inModule(e.Dir, e.File), e.Value, e.Max)
}
