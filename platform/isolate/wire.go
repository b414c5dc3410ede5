package isolate

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"

	"leasekit.dev/platform/kernel"
)

// The worker protocol: after the hello line, each request and each
// response is one frame, a 4-byte big-endian length and that many bytes of
// JSON, or, for a render's output, its binary form (see writeResponse).
// A worker that has read a request whole acknowledges it with the byte
// workerAck, before it decodes or evaluates anything, and then answers it;
// it answers each request before it reads the next. A worker that ends
// before its acknowledgement never started the call.
const (
	workerHello      = "leasekit.dev/platform/isolate worker v3\n"
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

// writeResponse writes resp as one frame: a render's output as
// kernel.RenderOutput.MarshalBinary encodes it, anything else in JSON.
// The two are told apart by the first byte: JSON's is '{', the binary
// form's never is.
func writeResponse(w *bufio.Writer, resp *workerResponse) error {
	if resp.Output != nil && resp.Err == nil && resp.Platform == nil {
		data, err := resp.Output.MarshalBinary()
		if err == nil && len(data) > 0 && data[0] != '{' {
			return writePayload(w, data)
		}
	}
	return writeFrame(w, resp)
}

// readResponse reads a frame writeResponse wrote. A worker's answer is
// untrusted: the binary form is read by UnmarshalBinary, which checks
// every count and length against the bytes there are.
func readResponse(r *bufio.Reader, max int64) (*workerResponse, error) {
	data, err := readPayload(r, max)
	if err != nil {
		return nil, err
	}
	if len(data) > 0 && data[0] != '{' {
		var out kernel.RenderOutput
		if err := out.UnmarshalBinary(data); err != nil {
			return nil, err
		}
		return &workerResponse{Output: &out}, nil
	}
	var resp workerResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}
