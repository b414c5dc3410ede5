//go:build unix

package crash

// Pid returns the process ID of p's child.
func Pid(p *Process) int { return p.cmd.Process.Pid }
