package isolate

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"leasekit.dev/platform/kernel"
)

// The worker protocol: after the hello line, each request and each
// response is one frame, a 4-byte big-endian length and that many bytes of
// JSON. A worker that has read a request whole acknowledges it with the
// byte workerAck, before it decodes or evaluates anything, and then
// answers it; it answers each request before it reads the next. A worker
// that ends before its acknowledgement never started the call.
const (
	workerHello      = "leasekit.dev/platform/kernel worker v2\n"
	workerAck   byte = 0x06
)

// A workerRequest is one build or render for a worker.
type workerRequest struct {
	Op       string                   `json:"op"` // "build" or "render"
	Limits   kernel.Limits            `json:"limits"`
	Dir      string                   `json:"dir,omitempty"` // a build's absolute directory
	Platform *kernel.Platform         `json:"platform,omitempty"`
	Instance *kernel.InstanceSnapshot `json:"instance,omitempty"`
	Unread   kernel.Instance          `json:"unread"` // an input the Kernel refuses unread
	Skew     kernel.SkewPolicy        `json:"skew,omitempty"`
}

// A workerResponse is a worker's answer to a request: its error as
// kernel.EncodeError encodes it.
type workerResponse struct {
	Platform *kernel.Platform     `json:"platform,omitempty"`
	Output   *kernel.RenderOutput `json:"output,omitempty"`
	Err      json.RawMessage      `json:"err,omitempty"`
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

// readAck reads a worker's acknowledgement of a request.
func readAck(r *bufio.Reader) error {
	b, err := r.ReadByte()
	if err != nil {
		return err
	}
	if b != workerAck {
		return fmt.Errorf("a byte %#x where the request's acknowledgement was due", b)
	}
	return nil
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
func appendOutput(b []byte, out *kernel.RenderOutput) ([]byte, error) {
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
func decodeOutput(b []byte) (*kernel.RenderOutput, error) {
	d := &decoder{b: b}
	out := &kernel.RenderOutput{Instance: d.string()}
	if n := d.uvarint(); n > 0 && n-1 <= uint64(len(d.b)) {
		out.Resources = make([]kernel.Resource, 0, n-1)
		for range n - 1 {
			r := kernel.Resource{Component: d.string(), Kind: d.string(), Name: d.string()}
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
