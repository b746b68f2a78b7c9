package lsp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/zap"
)

// maxHeaderBytes bounds one header block; maxBodyBytes one message (a
// didOpen of a large file is the largest an editor sends).
const (
	maxHeaderBytes = 8 << 10
	maxBodyBytes   = 256 << 20
)

// frameStream is a jsonrpc2.ObjectStream speaking LSP's base protocol
// (Content-Length headers). It differs from jsonrpc2's VSCodeObjectCodec
// in what a bad message does: there a body that is not JSON, or JSON that
// is not a JSON-RPC message, ends the connection (the codec stops reading
// mid-body); here the whole body is read first, the sender gets a
// JSON-RPC error (-32700 parse error or -32600 invalid request, with the
// request's id when it has one), and reading goes on with the next
// message. Only a header that does not say where the body ends (no or a
// bad Content-Length) still ends the connection: nothing can find the
// next message after it.
type frameStream struct {
	r   *bufio.Reader
	w   *bufio.Writer
	c   io.Closer
	log *zap.Logger

	wmu sync.Mutex // one message at a time on w
}

func newFrameStream(rwc io.ReadWriteCloser, log *zap.Logger) *frameStream {
	return &frameStream{r: bufio.NewReaderSize(rwc, 64<<10), w: bufio.NewWriterSize(rwc, 64<<10), c: rwc, log: log}
}

// WriteObject writes one message.
func (s *frameStream) WriteObject(obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return s.writeFrame(data)
}

func (s *frameStream) writeFrame(data []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := fmt.Fprintf(s.w, "Content-Length: %d\r\n\r\n", len(data)); err != nil {
		return err
	}
	if _, err := s.w.Write(data); err != nil {
		return err
	}
	return s.w.Flush()
}

// ReadObject reads the next message into v (jsonrpc2's message type),
// answering malformed ones itself.
func (s *frameStream) ReadObject(v any) error {
	for {
		body, err := s.readFrame()
		if err != nil {
			return err
		}
		if body == nil {
			continue // too large: answered and skipped
		}
		if err := json.Unmarshal(body, v); err != nil {
			s.reject(body, err)
			continue
		}
		return nil
	}
}

// Close closes the underlying stream.
func (s *frameStream) Close() error { return s.c.Close() }

// readFrame reads one header block and its body. A body over
// maxBodyBytes is skipped (answered with an error) and nil returned.
func (s *frameStream) readFrame() ([]byte, error) {
	length := -1
	headerBytes := 0
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" && headerBytes == 0 {
				return nil, io.EOF
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		headerBytes += len(line)
		if headerBytes > maxHeaderBytes {
			return nil, fmt.Errorf("lsp: header over %d bytes", maxHeaderBytes)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if headerBytes <= 2 {
				// A blank line between messages: tolerated.
				headerBytes = 0
				continue
			}
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("lsp: malformed header line %q", truncate(line, 80))
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 {
				return nil, fmt.Errorf("lsp: bad Content-Length %q", truncate(value, 40))
			}
			length = n
		}
	}
	if length < 0 {
		return nil, errors.New("lsp: message without Content-Length")
	}
	if length > maxBodyBytes {
		if _, err := s.r.Discard(length); err != nil {
			return nil, err
		}
		s.log.Warn("message too large: skipped", zap.Int("bytes", length))
		s.replyError(nil, jsonrpc2.CodeInvalidRequest, fmt.Sprintf("message of %d bytes is over the limit of %d", length, maxBodyBytes))
		return nil, nil
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(s.r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// reject answers a body jsonrpc2 could not take as a message: a parse
// error when it is not JSON, an invalid request (with its id, when it
// has a usable one) otherwise. A notification that is broken gets no
// answer where its lack of an id is certain.
func (s *frameStream) reject(body []byte, err error) {
	if !json.Valid(body) {
		s.log.Warn("message is not JSON", zap.Int("bytes", len(body)))
		s.replyError(nil, jsonrpc2.CodeParseError, "parse error: the message is not JSON")
		return
	}
	var probe struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	var id *jsonrpc2.ID
	if json.Unmarshal(body, &probe) == nil && len(probe.ID) > 0 {
		var parsed jsonrpc2.ID
		if json.Unmarshal(probe.ID, &parsed) == nil {
			id = &parsed
		}
	}
	s.log.Warn("invalid JSON-RPC message", zap.Error(err))
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		s.replyError(nil, jsonrpc2.CodeInvalidRequest, "invalid request: batches are not part of LSP")
		return
	}
	s.replyError(id, jsonrpc2.CodeInvalidRequest, "invalid request: "+err.Error())
}

// replyError writes an error response; a nil id is JSON null, as
// JSON-RPC answers a request whose id could not be read.
func (s *frameStream) replyError(id *jsonrpc2.ID, code int64, msg string) {
	resp := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      *jsonrpc2.ID    `json:"id"`
		Error   *jsonrpc2.Error `json:"error"`
	}{"2.0", id, &jsonrpc2.Error{Code: code, Message: msg}}
	data, err := json.Marshal(resp)
	if err != nil {
		return
	}
	if err := s.writeFrame(data); err != nil {
		s.log.Debug("writing an error response", zap.Error(err))
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
