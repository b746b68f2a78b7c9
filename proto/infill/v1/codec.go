package infillv1

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
)

// Codec is the gRPC protobuf codec the infill server and Go client install
// (grpc.ForceServerCodecV2, grpc.ForceCodecV2). It encodes exactly what
// gRPC's own proto codec does; only its buffers differ. gRPC's codec takes
// them from mem.DefaultBufferPool, whose tiers jump from 32 KB to 1 MB and
// which clears a whole buffer on every Get, so every message between
// 32 KB and 1 MB (a cursor file and its repository's digests) cost a 1 MB
// clear to send and another to receive: about 0.16 ms per call at 500
// files (server BenchmarkCompleteDigests). Codec's pool has a tier at
// every power of two up to 4 MB; larger messages use gRPC's fallback.
func Codec() encoding.CodecV2 { return codec{} }

// bufferPool is shared by every connection that uses Codec; it only holds
// free buffers, cleared before reuse.
var bufferPool = func() mem.BufferPool {
	p, err := mem.NewBinaryTieredBufferPool(8, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22)
	if err != nil {
		panic(err) // constant arguments
	}
	return p
}()

type codec struct{}

func (codec) Name() string { return "proto" }

func message(v any) (proto.Message, error) {
	switch m := v.(type) {
	case proto.Message:
		return m, nil
	case protoadapt.MessageV1:
		return protoadapt.MessageV2Of(m), nil
	}
	return nil, fmt.Errorf("infill codec: %T is not a protobuf message", v)
}

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	m, err := message(v)
	if err != nil {
		return nil, err
	}
	if e, ok := v.(vtEncoder); ok {
		return encode(e.SizeVT(), func(b []byte) ([]byte, error) {
			_, err := e.MarshalToSizedBufferVT(b)
			return b, err
		})
	}
	// Size computes and caches every submessage's size afresh (a caller may
	// have changed the message since it was last sent); the marshal then
	// reuses them.
	opts := proto.MarshalOptions{UseCachedSize: true}
	return encode(proto.Size(m), func(b []byte) ([]byte, error) { return opts.MarshalAppend(b[:0], m) })
}

// vtEncoder is implemented by the completion requests too (buf.gen.yaml):
// the generated encoder writes the bytes proto.Marshal writes
// (TestCodecMatchesProto), in about half the time at 500 files. Unlike
// proto.Marshal it sends strings that are not UTF-8, which the server
// then refuses, naming the field.
type vtEncoder interface {
	SizeVT() int
	MarshalToSizedBufferVT([]byte) (int, error)
}

// encode returns what write leaves in a buffer of size bytes, taken from
// the pool when the message is large enough to pool.
func encode(size int, write func([]byte) ([]byte, error)) (mem.BufferSlice, error) {
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := write(make([]byte, size))
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := bufferPool.Get(size)
	b, err := write((*buf)[:size])
	if err != nil {
		bufferPool.Put(buf)
		return nil, err
	}
	*buf = b
	return mem.BufferSlice{mem.NewBuffer(buf, bufferPool)}, nil
}

// unsafeDecoder is implemented by the messages buf generates with
// protoc-gen-go-vtproto's unmarshal_unsafe feature: the completion and
// edit-prediction requests (buf.gen.yaml lists them), the messages a
// server decodes on every keystroke.
type unsafeDecoder interface{ UnmarshalVTUnsafe([]byte) error }

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, err := message(v)
	if err != nil {
		return err
	}
	if d, ok := v.(unsafeDecoder); ok {
		// A request with 500 files sent as digests holds 1,000 short strings.
		// proto.Unmarshal allocates each one (and the 500 File messages
		// through reflection): 150 µs of a warm call in process. The
		// generated decoder lets them share one copy of the message instead
		// (62 µs). The copy is the message's own and is never written again,
		// so the strings stay valid; but any one of them keeps the whole
		// copy alive. Whoever keeps a string of such a request past the call
		// must therefore copy it (contextpack.Builder does).
		//
		// The generated decoder does not check UTF-8, which proto3 strings
		// must be; the server does (server.checkText), and answers
		// INVALID_ARGUMENT naming the field where proto.Unmarshal failed with
		// an error gRPC reports as INTERNAL.
		return d.UnmarshalVTUnsafe(data.Materialize())
	}
	// proto.Unmarshal copies what it keeps, so the buffer goes back at once.
	buf := data.MaterializeToBuffer(bufferPool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}
