// Package size is a flag.Value for a size in bytes written with a binary
// unit ("256MiB", "1GiB"), as the examples' --render-memory flags take
// it. A Flag is a plain integer: not safe for concurrent Set.
package size
