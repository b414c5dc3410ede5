package kernel

// WriteFiles lets the external tests write modules as these tests do.
var WriteFiles = writeFiles
