package server_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// wireCodec sends fixed bytes as the request, which a conforming client
// cannot: proto.Marshal refuses strings that are not UTF-8. Responses
// decode as the Go client decodes them.
type wireCodec struct{ wire []byte }

func (c wireCodec) Name() string { return "proto" }

func (c wireCodec) Marshal(any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(c.wire)}, nil
}

func (c wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return infillv1.Codec().Unmarshal(data, v)
}

// step is one field on the way to a string field; index is the element of
// a repeated field.
type step struct {
	fd    protoreflect.FieldDescriptor
	index int
}

func (s step) String() string {
	if s.fd.IsList() {
		return fmt.Sprintf("%s[%d]", s.fd.Name(), s.index)
	}
	return string(s.fd.Name())
}

// fill sets every field of m that holds text, directly or in a message:
// strings to "ok", messages to filled ones, repeated fields to one
// element. It returns the path of each string field.
func fill(m protoreflect.Message, at []step) [][]step {
	var paths [][]step
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		here := append(append([]step(nil), at...), step{fd: fd})
		switch {
		case fd.Kind() == protoreflect.StringKind && fd.IsList():
			m.Mutable(fd).List().Append(protoreflect.ValueOfString("ok"))
			paths = append(paths, here)
		case fd.Kind() == protoreflect.StringKind:
			m.Set(fd, protoreflect.ValueOfString("ok"))
			paths = append(paths, here)
		case fd.Kind() == protoreflect.MessageKind && fd.IsList():
			l := m.Mutable(fd).List()
			e := l.NewElement()
			paths = append(paths, fill(e.Message(), here)...)
			l.Append(e)
		case fd.Kind() == protoreflect.MessageKind && !fd.IsMap():
			paths = append(paths, fill(m.Mutable(fd).Message(), here)...)
		}
	}
	return paths
}

// setString sets the string at path in m (filled by fill) to s.
func setString(m protoreflect.Message, path []step, s string) {
	for _, st := range path[:len(path)-1] {
		if st.fd.IsList() {
			m = m.Mutable(st.fd).List().Get(st.index).Message()
		} else {
			m = m.Mutable(st.fd).Message()
		}
	}
	last := path[len(path)-1]
	if last.fd.IsList() {
		m.Mutable(last.fd).List().Set(last.index, protoreflect.ValueOfString(s))
	} else {
		m.Set(last.fd, protoreflect.ValueOfString(s))
	}
}

// TestInvalidUTF8 sends each string field of both completion requests in
// turn as bytes that are not UTF-8 (which the server's decoder does not
// check; server.checkText does) and expects INVALID_ARGUMENT naming that
// field. The fields come from the descriptors, so a string field added to
// the API and not to checkText fails here.
func TestInvalidUTF8(t *testing.T) {
	t.Parallel()
	client, _ := startFake(t, fakeBuilder{}, &fakeBackend{})
	const marker = "@@MARK@@"
	// 0xC3 begins a two-byte sequence that '(' does not continue; the
	// replacement keeps every length in the encoding.
	const broken = "\xc3(@MARK@"
	call := func(m proto.Message, wire []byte) error {
		ctx := context.Background()
		codec := grpc.ForceCodecV2(wireCodec{wire})
		switch m.(type) {
		case *infillv1.CompleteRequest:
			_, err := client.Complete(ctx, &infillv1.CompleteRequest{}, codec)
			return err
		case *infillv1.PredictEditRequest:
			_, err := client.PredictEdit(ctx, &infillv1.PredictEditRequest{}, codec)
			return err
		case *infillv1.StreamPredictEditRequest:
			return drain(client.StreamPredictEdit(ctx, &infillv1.StreamPredictEditRequest{}, codec))
		}
		return drain(client.StreamComplete(ctx, &infillv1.StreamCompleteRequest{}, codec))
	}
	requests := []proto.Message{&infillv1.CompleteRequest{}, &infillv1.StreamCompleteRequest{},
		&infillv1.PredictEditRequest{}, &infillv1.StreamPredictEditRequest{}}
	for _, empty := range requests {
		name := string(empty.ProtoReflect().Descriptor().Name())
		paths := fill(proto.Clone(empty).ProtoReflect(), nil)
		if len(paths) < 13 {
			t.Fatalf("%s: only %d string fields found", name, len(paths))
		}
		for _, path := range paths {
			var field []string
			for _, st := range path {
				field = append(field, st.String())
			}
			want := strings.Join(field, ".")
			m := proto.Clone(empty).ProtoReflect()
			fill(m, nil)
			setString(m, path, marker)
			wire, err := proto.Marshal(m.Interface())
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Count(wire, []byte(marker)) != 1 {
				t.Fatalf("%s %s: marker not found once in the encoding", name, want)
			}
			err = call(empty, bytes.Replace(wire, []byte(marker), []byte(broken), 1))
			st := status.Convert(err)
			var br *errdetails.BadRequest
			for _, d := range st.Details() {
				if b, ok := d.(*errdetails.BadRequest); ok {
					br = b
				}
			}
			if st.Code() != codes.InvalidArgument || br == nil || br.FieldViolations[0].Field != want ||
				!strings.Contains(st.Message(), "not valid UTF-8 (at byte 0)") {
				t.Errorf("%s %s: %v, details %v", name, want, err, st.Details())
			}
		}
	}

	// Text that is UTF-8, U+FFFD included, passes the check.
	for _, empty := range requests {
		m := proto.Clone(empty).ProtoReflect()
		d := m.Descriptor().Fields()
		m.Set(d.ByName("repository"), protoreflect.ValueOfMessage((&infillv1.Repository{Name: "é", Files: []*infillv1.File{
			{Path: "ü.py", Content: proto.String("x = '\uFFFD—𝄞'\n")}}}).ProtoReflect()))
		m.Set(d.ByName("cursor"), protoreflect.ValueOfMessage((&infillv1.Cursor{Path: "ü.py"}).ProtoReflect()))
		wire, err := proto.Marshal(m.Interface())
		if err != nil {
			t.Fatal(err)
		}
		if err := call(empty, wire); err != nil {
			t.Errorf("%T with UTF-8 text: %v", empty, err)
		}
	}
}
