package publish

// DigestFiles is the digest a Publisher gives files.
var DigestFiles = digestOf
