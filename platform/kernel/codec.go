package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"syscall"
)

// The kernel's values as plain data, for a caller that sends a build or
// render to another process and back: a Platform and an InstanceSnapshot
// in JSON, and each error the kernel returns.

// platformJSON is a Platform in JSON: its exported fields under their own
// names, and what a render needs of its build.
type platformJSON struct {
	Name     string
	Type     string
	Module   string
	Labels   map[string]string
	Catalogs []Catalog
	Dir      string
	Digest   string
	Size     int64      `json:",omitempty"`
	Built    *builtJSON `json:",omitempty"`
}

type builtJSON struct {
	Digest   string            `json:"digest"`
	Name     string            `json:"name"`
	Type     string            `json:"type"`
	Labels   map[string]string `json:"labels"`
	Versions map[string]string `json:"versions"`
	TypeSet  bool              `json:"typeSet,omitempty"`
	Plain    bool              `json:"plain,omitempty"` // false, as an older encoding decodes: the forms are not known
}

// MarshalJSON encodes p with what its build decoded, so that a Platform
// decoded by UnmarshalJSON renders as p does, in any process.
func (p *Platform) MarshalJSON() ([]byte, error) {
	w := platformJSON{Name: p.Name, Type: p.Type, Module: p.Module, Labels: p.Labels,
		Catalogs: p.Catalogs, Dir: p.Dir, Digest: p.Digest, Size: p.size}
	if b := p.built; b != nil {
		w.Built = &builtJSON{Digest: b.digest, Name: b.name, Type: b.typ, Labels: b.labels, Versions: b.versions,
			TypeSet: b.typeSet, Plain: b.plain}
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes what MarshalJSON encoded into p. On failure p is
// left as it was.
func (p *Platform) UnmarshalJSON(data []byte) error {
	var w platformJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*p = Platform{Name: w.Name, Type: w.Type, Module: w.Module, Labels: w.Labels,
		Catalogs: w.Catalogs, Dir: w.Dir, Digest: w.Digest, size: w.Size}
	if b := w.Built; b != nil {
		p.built = &builtPlatform{digest: b.Digest, name: b.Name, typ: b.Type, labels: b.Labels, versions: b.Versions,
			platformForms: platformForms{typeSet: b.TypeSet, plain: b.Plain}}
	}
	return nil
}

// snapshotJSON is an InstanceSnapshot in JSON.
type snapshotJSON struct {
	Dir    string            `json:"dir"`
	Files  map[string][]byte `json:"files"`
	Digest string            `json:"digest"`
	Size   int64             `json:"size"`
}

// MarshalJSON encodes s: the name its errors give the instance, its
// files, their digest and size.
func (s *InstanceSnapshot) MarshalJSON() ([]byte, error) {
	return json.Marshal(snapshotJSON{Dir: s.dir, Files: s.files, Digest: s.digest, Size: s.size})
}

// UnmarshalJSON decodes what MarshalJSON encoded into s. On failure s is
// left as it was.
func (s *InstanceSnapshot) UnmarshalJSON(data []byte) error {
	var w snapshotJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*s = InstanceSnapshot{dir: w.Dir, files: w.Files, digest: w.Digest, size: w.Size}
	return nil
}

var textErrorType = reflect.TypeOf(errors.New(""))

func toWireError(err error) *wireError {
	if err == nil {
		return nil
	}
	for _, s := range sentinels {
		if err == s.err {
			return &wireError{Kind: "sentinel", Msg: s.name}
		}
	}
	wrapped := func(errs ...error) []*wireError {
		var w []*wireError
		for _, e := range errs {
			w = append(w, toWireError(e))
		}
		return w
	}
	if k := kindOf(err); k != nil {
		w, errs := k.encode(err)
		w.Kind, w.Errs = k.name, wrapped(errs...)
		return w
	}
	switch e := err.(type) {
	case *fs.PathError:
		return &wireError{Kind: "PathError", Op: e.Op, Path: e.Path, Errs: wrapped(e.Err)}
	case syscall.Errno:
		return &wireError{Kind: "Errno", Value: int64(e)}
	}
	if reflect.TypeOf(err) == textErrorType {
		return &wireError{Kind: "text", Msg: err.Error()}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok && reflect.TypeOf(err) == joinErrorType {
		return &wireError{Kind: "join", Errs: wrapped(j.Unwrap()...)}
	}
	return toWireError(flatten(err))
}

// error rebuilds the error w describes.
func (w *wireError) error() error {
	if w == nil {
		return nil
	}
	var errs []error
	for _, e := range w.Errs {
		errs = append(errs, e.error())
	}
	if k := kindNamed(w.Kind); k != nil {
		return k.decode(w, errs)
	}
	switch w.Kind {
	case "sentinel":
		for _, s := range sentinels {
			if s.name == w.Msg {
				return s.err
			}
		}
	case "PathError":
		return &fs.PathError{Op: w.Op, Path: w.Path, Err: first(errs)}
	case "Errno":
		return syscall.Errno(w.Value)
	case "text":
		return errors.New(w.Msg)
	case "join":
		return errors.Join(errs...)
	}
	return fmt.Errorf("kernel: a worker answered with an error of unknown kind %q: %s", w.Kind, w.Msg)
}

// EncodeError returns err as plain data in JSON: its type and fields and
// the errors it wraps. Each of the kernel's own errors, the errors they
// wrap (an *fs.PathError, a syscall.Errno, a flattened error, a join) and
// the sentinels they match travel as they are, so that DecodeError gives
// back an error equal to err, by type and by text. Any other error
// travels flattened. A nil err encodes as null.
func EncodeError(err error) json.RawMessage {
	data, merr := json.Marshal(toWireError(err))
	if merr != nil { // plain strings and numbers: never
		panic(merr)
	}
	return data
}

// DecodeError returns the error data describes, as EncodeError encoded
// it: nil for null. Data that describes no error decodes to an error that
// says so.
func DecodeError(data json.RawMessage) error {
	var w *wireError
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("kernel: an encoded error that does not decode: %v", err)
	}
	return w.error()
}
