package kernel

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"reflect"
	"syscall"
)

// The worker protocol: after the hello line, each request and each
// response is one frame, a 4-byte big-endian length and that many bytes of
// JSON. A worker answers each request before it reads the next.
const workerHello = "leasekit.dev/platform/kernel worker v1\n"

// A workerRequest is one build or render for a worker.
type workerRequest struct {
	Op       string        `json:"op"` // "build" or "render"
	Limits   Limits        `json:"limits"`
	Dir      string        `json:"dir,omitempty"` // a build's absolute directory
	Platform *wirePlatform `json:"platform,omitempty"`
	Instance *wireInstance `json:"instance,omitempty"`
	Skew     SkewPolicy    `json:"skew,omitempty"`
}

// A workerResponse is a worker's answer to a request.
type workerResponse struct {
	Platform *wirePlatform `json:"platform,omitempty"`
	Output   *RenderOutput `json:"output,omitempty"`
	Err      *wireError    `json:"err,omitempty"`
}

// A wirePlatform is a Platform, what a render needs of its build included.
type wirePlatform struct {
	Name     string            `json:"name"`
	Type     string            `json:"type"`
	Module   string            `json:"module"`
	Labels   map[string]string `json:"labels"`
	Catalogs []Catalog         `json:"catalogs"`
	Dir      string            `json:"dir"`
	Digest   string            `json:"digest"`
	Size     int64             `json:"size"`
	Built    *wireBuilt        `json:"built,omitempty"`
}

type wireBuilt struct {
	Digest   string            `json:"digest"`
	Name     string            `json:"name"`
	Type     string            `json:"type"`
	Labels   map[string]string `json:"labels"`
	Versions map[string]string `json:"versions"`
}

func toWirePlatform(p *Platform) *wirePlatform {
	if p == nil {
		return nil
	}
	w := &wirePlatform{Name: p.Name, Type: p.Type, Module: p.Module, Labels: p.Labels,
		Catalogs: p.Catalogs, Dir: p.Dir, Digest: p.Digest, Size: p.size}
	if b := p.built; b != nil {
		w.Built = &wireBuilt{Digest: b.digest, Name: b.name, Type: b.typ, Labels: b.labels, Versions: b.versions}
	}
	return w
}

func (w *wirePlatform) platform() *Platform {
	if w == nil {
		return nil
	}
	p := &Platform{Name: w.Name, Type: w.Type, Module: w.Module, Labels: w.Labels,
		Catalogs: w.Catalogs, Dir: w.Dir, Digest: w.Digest, size: w.Size}
	if b := w.Built; b != nil {
		p.built = &builtPlatform{digest: b.Digest, name: b.Name, typ: b.Type, labels: b.Labels, versions: b.Versions}
	}
	return p
}

// A wireInstance is an instance module as one read found it.
type wireInstance struct {
	Dir    string            `json:"dir"`
	Files  map[string][]byte `json:"files"`
	Digest string            `json:"digest"`
	Size   int64             `json:"size"`
}

// A wireError is an error the kernel returns, as plain data: its type and
// fields, and the errors it wraps. Each of the kernel's own errors, the
// errors they wrap (an *fs.PathError, a syscall.Errno, a flattened error,
// a join) and the sentinels they match travel as they are, so that the
// error rebuilt on the other side equals the one sent, by type and by
// text. Any other error travels flattened.
type wireError struct {
	Kind      string       `json:"kind"`
	Op        string       `json:"op,omitempty"`
	Dir       string       `json:"dir,omitempty"`
	Path      string       `json:"path,omitempty"`
	File      string       `json:"file,omitempty"`
	Rule      string       `json:"rule,omitempty"`
	Component string       `json:"component,omitempty"`
	Position  string       `json:"position,omitempty"`
	Want      string       `json:"want,omitempty"`
	Got       string       `json:"got,omitempty"`
	Limit     string       `json:"limit,omitempty"`
	Msg       string       `json:"msg,omitempty"`
	Value     int64        `json:"value,omitempty"`
	Max       int64        `json:"max,omitempty"`
	Problems  []Problem    `json:"problems,omitempty"`
	Errs      []*wireError `json:"errs,omitempty"` // what it wraps
}

// wireSentinels are the sentinels an error may be or match, by name.
var wireSentinels = map[string]error{
	"Canceled": context.Canceled, "DeadlineExceeded": context.DeadlineExceeded,
	"ErrNotExist": fs.ErrNotExist, "ErrPermission": fs.ErrPermission, "ErrExist": fs.ErrExist,
	"ErrInvalid": fs.ErrInvalid, "ErrClosed": fs.ErrClosed,
}

var textErrorType = reflect.TypeOf(errors.New(""))

func toWireError(err error) *wireError {
	if err == nil {
		return nil
	}
	for name, s := range wireSentinels {
		if err == s {
			return &wireError{Kind: "sentinel", Msg: name}
		}
	}
	wrapped := func(errs ...error) []*wireError {
		var w []*wireError
		for _, e := range errs {
			w = append(w, toWireError(e))
		}
		return w
	}
	switch e := err.(type) {
	case *Error:
		return &wireError{Kind: "Error", Op: e.Op, Dir: e.Dir, Problems: e.Problems, Errs: wrapped(e.Err)}
	case *SkewError:
		return &wireError{Kind: "SkewError", Path: e.Path, Want: e.InstanceVersion, Got: e.PlatformVersion}
	case *CatalogError:
		return &wireError{Kind: "CatalogError", Path: e.Path, Component: e.Component, Rule: e.Rule, Position: e.Position}
	case *ContentError:
		return &wireError{Kind: "ContentError", Dir: e.Dir, Want: e.Want, Got: e.Got, Errs: wrapped(e.Err)}
	case *FileError:
		return &wireError{Kind: "FileError", Dir: e.Dir, File: e.File, Rule: e.Rule, Errs: wrapped(e.Err)}
	case *LimitError:
		return &wireError{Kind: "LimitError", Limit: e.Limit, Dir: e.Dir, File: e.File, Value: e.Value, Max: e.Max}
	case *flatError:
		return &wireError{Kind: "flat", Msg: e.msg, Errs: wrapped(e.is...)}
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

var joinErrorType = reflect.TypeOf(errors.Join(errors.New("")))

// error rebuilds the error w describes.
func (w *wireError) error() error {
	if w == nil {
		return nil
	}
	var errs []error
	for _, e := range w.Errs {
		errs = append(errs, e.error())
	}
	first := func() error {
		if len(errs) == 0 {
			return nil
		}
		return errs[0]
	}
	switch w.Kind {
	case "sentinel":
		if s, ok := wireSentinels[w.Msg]; ok {
			return s
		}
	case "Error":
		return &Error{Op: w.Op, Dir: w.Dir, Problems: w.Problems, Err: first()}
	case "SkewError":
		return &SkewError{Path: w.Path, InstanceVersion: w.Want, PlatformVersion: w.Got}
	case "CatalogError":
		return &CatalogError{Path: w.Path, Component: w.Component, Rule: w.Rule, Position: w.Position}
	case "ContentError":
		return &ContentError{Dir: w.Dir, Want: w.Want, Got: w.Got, Err: first()}
	case "FileError":
		return &FileError{Dir: w.Dir, File: w.File, Rule: w.Rule, Err: first()}
	case "LimitError":
		return &LimitError{Limit: w.Limit, Dir: w.Dir, File: w.File, Value: w.Value, Max: w.Max}
	case "flat":
		return &flatError{msg: w.Msg, is: errs}
	case "PathError":
		return &fs.PathError{Op: w.Op, Path: w.Path, Err: first()}
	case "Errno":
		return syscall.Errno(w.Value)
	case "text":
		return errors.New(w.Msg)
	case "join":
		return errors.Join(errs...)
	}
	return fmt.Errorf("kernel: a worker answered with an error of unknown kind %q: %s", w.Kind, w.Msg)
}

// writeFrame writes v, in JSON, as one frame.
func writeFrame(w *bufio.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writePayload(w, data)
}

// writePayload writes data as one frame.
func writePayload(w *bufio.Writer, data []byte) error {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	return w.Flush()
}

// readFrame reads one frame of at most max bytes, in JSON, into v.
func readFrame(r *bufio.Reader, max int64, v any) error {
	data, err := readPayload(r, max)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// readPayload reads one frame of at most max bytes.
func readPayload(r *bufio.Reader, max int64) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := int64(binary.BigEndian.Uint32(n[:]))
	if size > max {
		return nil, fmt.Errorf("a frame of %d bytes, more than the most of %d", size, max)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return data, nil
}

// writeResponse writes resp as one frame: a render's output in binary,
// anything else in JSON.
func writeResponse(w *bufio.Writer, resp *workerResponse) error {
	if resp.Output != nil && resp.Err == nil && resp.Platform == nil {
		data, err := appendOutput(nil, resp.Output)
		if err == nil {
			return writePayload(w, data)
		}
	}
	return writeFrame(w, resp)
}

// readResponse reads a frame writeResponse wrote.
func readResponse(r *bufio.Reader, max int64) (*workerResponse, error) {
	data, err := readPayload(r, max)
	if err != nil {
		return nil, err
	}
	if len(data) > 0 && data[0] == responseOutput {
		out, err := decodeOutput(data[1:])
		if err != nil {
			return nil, err
		}
		return &workerResponse{Output: out}, nil
	}
	var resp workerResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

func (w *wireInstance) snapshot() *InstanceSnapshot {
	if w == nil {
		return nil
	}
	return &InstanceSnapshot{dir: w.Dir, files: w.Files, digest: w.Digest, size: w.Size}
}

// A rendered output travels in a binary form of its own: encoding/json
// would cost, with its reflection over map[string]any, a good part of the
// render it carries. Each value of a resource is a tag and its data.
const (
	tagNil byte = iota
	tagFalse
	tagTrue
	tagNumber // float64, 8 bytes
	tagString // uvarint length, bytes
	tagList   // uvarint length, values
	tagMap    // uvarint length, (string, value) pairs
	tagJSON   // uvarint length, JSON: a value of any other type
)

// The first byte of a response frame's payload.
const (
	responseJSON   byte = '{' // a workerResponse in JSON
	responseOutput byte = 0   // a RenderOutput, binary
)

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendValue appends v, a value as encoding/json decodes one into an
// any, to b.
func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, tagNil), nil
	case bool:
		if v {
			return append(b, tagTrue), nil
		}
		return append(b, tagFalse), nil
	case float64:
		return binary.BigEndian.AppendUint64(append(b, tagNumber), math.Float64bits(v)), nil
	case string:
		return appendString(append(b, tagString), v), nil
	case []any:
		b = binary.AppendUvarint(append(b, tagList), uint64(len(v)))
		var err error
		for _, x := range v {
			if b, err = appendValue(b, x); err != nil {
				return nil, err
			}
		}
		return b, nil
	case map[string]any:
		b = binary.AppendUvarint(append(b, tagMap), uint64(len(v)))
		var err error
		for k, x := range v {
			b = appendString(b, k)
			if b, err = appendValue(b, x); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(binary.AppendUvarint(append(b, tagJSON), uint64(len(data))), data...), nil
}

// appendOutput appends out to b.
func appendOutput(b []byte, out *RenderOutput) ([]byte, error) {
	b = appendString(append(b, responseOutput), out.Instance)
	n := uint64(0) // a nil slice
	if out.Resources != nil {
		n = uint64(len(out.Resources)) + 1
	}
	b = binary.AppendUvarint(b, n)
	var err error
	for _, r := range out.Resources {
		b = appendString(appendString(appendString(b, r.Component), r.Kind), r.Name)
		if b, err = appendValue(b, r.Object); err != nil {
			return nil, err
		}
	}
	diags, err := json.Marshal(out.Diagnostics)
	if err != nil {
		return nil, err
	}
	return appendString(b, string(diags)), nil
}

// A decoder reads what appendOutput wrote.
type decoder struct {
	b   []byte
	err error
}

var errShort = errors.New("a truncated render output")

func (d *decoder) uvarint() uint64 {
	n, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[k:]
	return n
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errShort
	}
	d.b = nil
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) value() any {
	if len(d.b) == 0 {
		d.fail()
		return nil
	}
	tag := d.b[0]
	d.b = d.b[1:]
	switch tag {
	case tagNil:
		return nil
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagNumber:
		if len(d.b) < 8 {
			d.fail()
			return nil
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(d.b))
		d.b = d.b[8:]
		return f
	case tagString:
		return d.string()
	case tagList:
		n := d.uvarint()
		if n > uint64(len(d.b)) {
			d.fail()
			return nil
		}
		l := make([]any, 0, n)
		for range n {
			l = append(l, d.value())
		}
		return l
	case tagMap:
		n := d.uvarint()
		if n > uint64(len(d.b)) {
			d.fail()
			return nil
		}
		m := make(map[string]any, n)
		for range n {
			k := d.string()
			m[k] = d.value()
		}
		return m
	case tagJSON:
		var x any
		if err := json.Unmarshal(d.bytes(), &x); err != nil && d.err == nil {
			d.err = err
		}
		return x
	}
	d.fail()
	return nil
}

// decodeOutput decodes what appendOutput wrote, after its first byte.
func decodeOutput(b []byte) (*RenderOutput, error) {
	d := &decoder{b: b}
	out := &RenderOutput{Instance: d.string()}
	if n := d.uvarint(); n > 0 && n-1 <= uint64(len(d.b)) {
		out.Resources = make([]Resource, 0, n-1)
		for range n - 1 {
			r := Resource{Component: d.string(), Kind: d.string(), Name: d.string()}
			r.Object, _ = d.value().(map[string]any)
			out.Resources = append(out.Resources, r)
		}
	} else if n > 0 {
		d.fail()
	}
	diags := d.bytes()
	if d.err != nil {
		return nil, d.err
	}
	if err := json.Unmarshal(diags, &out.Diagnostics); err != nil {
		return nil, err
	}
	return out, nil
}
