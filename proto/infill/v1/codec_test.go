package infillv1_test

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// request is a CompleteRequest of about size bytes.
func request(size int) *infillv1.CompleteRequest {
	return &infillv1.CompleteRequest{
		Repository: &infillv1.Repository{Name: "r", Files: []*infillv1.File{
			{Path: "a.py", Content: proto.String(strings.Repeat("x = 1\n", size/6))},
			{Path: "b.py", Digest: "sha256:" + strings.Repeat("ab", 32)},
		}},
		Cursor: &infillv1.Cursor{Path: "a.py", Line: 1},
	}
}

// TestCodecMatchesProto checks that Codec writes what proto.Marshal
// writes and reads it back, below the pooling threshold, inside the
// pool's tiers and above them, from one buffer or from several (as HTTP/2
// frames deliver a message).
func TestCodecMatchesProto(t *testing.T) {
	c := infillv1.Codec()
	if c.Name() != "proto" {
		t.Fatalf("Name %q: the content-subtype must stay proto", c.Name())
	}
	for _, size := range []int{100, 40 << 10, 700 << 10, 5 << 20} {
		in := request(size)
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		got := out.Materialize()
		out.Free()
		if !bytes.Equal(got, want) {
			t.Fatalf("size %d: encoding differs from proto.Marshal (%d vs %d bytes)", size, len(got), len(want))
		}
		for _, frame := range []int{len(got), 16 << 10} {
			var data mem.BufferSlice
			for off := 0; off < len(got); off += frame {
				data = append(data, mem.SliceBuffer(got[off:min(off+frame, len(got))]))
			}
			var back infillv1.CompleteRequest
			if err := c.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(&back, in) {
				t.Fatalf("size %d, %d-byte buffers: decoded message differs", size, frame)
			}
		}
	}
}

func TestCodecRejectsNonMessages(t *testing.T) {
	c := infillv1.Codec()
	if _, err := c.Marshal("text"); err == nil {
		t.Error("Marshal of a string succeeded")
	}
	var s string
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{1})}, &s); err == nil {
		t.Error("Unmarshal into a string succeeded")
	}
}

// TestCodecAfterChange sends a message, changes it and sends it again, as
// a caller that edits its request between calls does: sizes cached by the
// first call must not be reused.
func TestCodecAfterChange(t *testing.T) {
	c := infillv1.Codec()
	in := request(40 << 10)
	for i := range 2 {
		out, err := c.Marshal(in)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		var back infillv1.CompleteRequest
		err = c.Unmarshal(out, &back)
		out.Free()
		if err != nil || !proto.Equal(&back, in) {
			t.Fatalf("call %d: %v, or the decoded message differs", i, err)
		}
		in.Repository.Files[0].Content = proto.String(in.Repository.Files[0].GetContent() + "y = 2\n")
	}
}
