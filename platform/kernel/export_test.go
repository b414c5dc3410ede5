package kernel

// WriteFiles lets the external tests write modules as these tests do.
var WriteFiles = writeFiles

// mustResolve returns l with its defaults, for tests with valid limits.
func (l Limits) mustResolve() Limits {
	r, err := l.resolved()
	if err != nil {
		panic(err)
	}
	return r
}
