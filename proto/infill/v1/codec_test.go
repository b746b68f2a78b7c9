package infillv1_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

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

// dropUnknown clears the unknown fields of m and the messages in it, which
// the generated decoder does not keep inside a Duration.
func dropUnknown(m proto.Message) {
	var walk func(protoreflect.Message)
	walk = func(m protoreflect.Message) {
		m.SetUnknown(nil)
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.Kind() != protoreflect.MessageKind:
			case fd.IsList():
				for i := 0; i < v.List().Len(); i++ {
					walk(v.List().Get(i).Message())
				}
			default:
				walk(v.Message())
			}
			return true
		})
	}
	walk(m.ProtoReflect())
}

// FuzzCodecDecodesAsProto checks the completion and edit requests' generated
// decoder against proto.Unmarshal on any bytes: what proto.Unmarshal
// accepts, Codec decodes to an equal message and encodes to the same
// bytes; a field sent with the wrong
// wire type, which proto.Unmarshal keeps as an unknown field, is the one
// thing Codec refuses instead. Unknown fields are not compared: the
// decoder drops those inside a Duration, and nothing reads them. Of what
// proto.Unmarshal refuses, Codec accepts strings that are not UTF-8 (the
// server checks them) and malformed groups among unknown fields (skipped
// alike); nothing is asked of those bytes but that they decode without
// a panic.
func FuzzCodecDecodesAsProto(f *testing.F) {
	for _, m := range []proto.Message{
		request(100),
		&infillv1.CompleteRequest{
			Repository: &infillv1.Repository{Name: "r", Base: "snap:x", Removed: []string{"c.py"}, Files: []*infillv1.File{
				{Path: "a.py", Digest: "sha256:00", Language: "python", Edits: []*infillv1.Edit{{Start: 1, End: 2, Text: "é"}}}}},
			Cursor:        &infillv1.Cursor{Path: "a.py", Line: 3, Column: 4, Offset: 5, Encoding: infillv1.PositionEncoding_POSITION_ENCODING_UTF8},
			Generation:    &infillv1.GenerationOptions{MaxTokens: 9, Temperature: proto.Float32(0.5), Seed: proto.Int64(-1), Stop: []string{"\n"}},
			TokenBudget:   100,
			Model:         "m",
			ClientId:      "c",
			SessionId:     "s",
			LatencyBudget: durationpb.New(1500 * time.Millisecond),
			ContextDetail: infillv1.ContextDetail_CONTEXT_DETAIL_FULL,
		},
		&infillv1.PredictEditRequest{
			Repository:  &infillv1.Repository{Name: "r", Files: []*infillv1.File{{Path: "a.py", Content: proto.String("x\n")}}},
			Cursor:      &infillv1.Cursor{Path: "a.py", Offset: 1, Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET},
			RecentEdits: []*infillv1.RecentEdit{{Path: "a.py", Diff: "@@ -1 +1 @@\n-y\n+x\n", Time: timestamppb.New(time.Unix(1700000000, 5))}},
			Format:      infillv1.EditPromptFormat_EDIT_PROMPT_FORMAT_INSTINCT,
			SessionId:   "s",
		},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("\x0a\x05\x12\x03\x0a\x01\xff")) // a path that is not UTF-8
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, empty := range []proto.Message{&infillv1.CompleteRequest{}, &infillv1.StreamCompleteRequest{},
			&infillv1.PredictEditRequest{}, &infillv1.StreamPredictEditRequest{}} {
			want, got := proto.Clone(empty), proto.Clone(empty)
			werr := proto.Unmarshal(b, want)
			gerr := infillv1.Codec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, got)
			if werr != nil {
				continue // nothing asked but no panic
			}
			if gerr != nil {
				if !strings.Contains(gerr.Error(), "wrong wireType") {
					t.Fatalf("%T: proto.Unmarshal accepts what Codec refuses: %v", empty, gerr)
				}
				continue
			}
			dropUnknown(got)
			dropUnknown(want)
			if !proto.Equal(got, want) {
				t.Fatalf("%T: decoded messages differ:\n%v\n%v", empty, got, want)
			}
			// And Codec encodes what it decoded as proto.Marshal does.
			wb, err := proto.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			gb, err := infillv1.Codec().Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gb.Materialize(), wb) {
				t.Fatalf("%T: encodings differ", empty)
			}
			gb.Free()
		}
	})
}
