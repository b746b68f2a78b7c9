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
	// Size computes and caches every submessage's size afresh (a caller may
	// have changed the message since it was last sent); the marshal then
	// reuses them.
	size := proto.Size(m)
	opts := proto.MarshalOptions{UseCachedSize: true}
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := bufferPool.Get(size)
	b, err := opts.MarshalAppend((*buf)[:0], m)
	if err != nil {
		bufferPool.Put(buf)
		return nil, err
	}
	*buf = b
	return mem.BufferSlice{mem.NewBuffer(buf, bufferPool)}, nil
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, err := message(v)
	if err != nil {
		return err
	}
	// proto.Unmarshal copies what it keeps, so the buffer goes back at once.
	buf := data.MaterializeToBuffer(bufferPool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}
