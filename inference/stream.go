package inference

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/ollama/ollama/api"
)

// maxLine bounds one NDJSON line from the backend (a generate chunk is a
// few hundred bytes; a final message with logprobs can be larger).
const maxLine = 16 << 20

// generateStream posts req to /api/generate and calls fn for each streamed
// message; more reports that the next message has arrived already (a
// whole line is buffered), so a caller can send both as one. It replaces api.Client.Generate on the hot path, for two reasons
// measured here (bench/ghz): that client allocates and zeroes an 8 MiB
// scan buffer on every call (a fifth of the server's CPU per request, plus
// the GC it causes), and it drops read errors, so a cut connection looked
// like a clean end. The request and response types are still the api
// package's. w, the request's watchdog, hears of every message and is
// paused while fn runs.
func generateStream(ctx context.Context, hc *http.Client, base *url.URL, req *api.GenerateRequest, w *watch, fn func(r api.GenerateResponse, more bool) error) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, base.JoinPath("/api/generate").String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/x-ndjson")
	markRetryable(hreq)
	resp, err := hc.Do(hreq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	w.answer()
	if resp.StatusCode >= http.StatusBadRequest {
		return statusError(resp)
	}
	return eachLine(resp.Body, func(line []byte, br *bufio.Reader) error {
		if line = bytes.TrimSpace(line); len(line) == 0 {
			return nil
		}
		var msg struct {
			api.GenerateResponse
			Error string `json:"error"`
		}
		if jerr := json.Unmarshal(line, &msg); jerr != nil {
			return fmt.Errorf("backend sent malformed JSON: %w", jerr)
		}
		w.message(msg.Response != "")
		if msg.Error != "" {
			return errors.New(msg.Error) // an error in the middle of a stream
		}
		more := false
		if n := br.Buffered(); n > 0 {
			next, _ := br.Peek(n) // what is buffered already: never blocks
			more = bytes.IndexByte(next, '\n') >= 0
		}
		if ferr := fn(msg.GenerateResponse, more); ferr != nil {
			return ferr
		}
		w.resume()
		return nil
	})
}

// eachLine reads r line by line and calls fn with each line (its end
// included; the last one may have none) and the reader, to look at what
// is buffered already. A line longer than the 16 KiB buffer is put
// together, up to maxLine. It returns fn's error, or nil at the end of r.
func eachLine(r io.Reader, fn func(line []byte, br *bufio.Reader) error) error {
	br := bufio.NewReaderSize(r, 16<<10)
	var long []byte // a line longer than the buffer
	for {
		chunk, err := br.ReadSlice('\n')
		line := chunk
		if err == bufio.ErrBufferFull || long != nil {
			long = append(long, chunk...)
			if len(long) > maxLine {
				return fmt.Errorf("backend sent a line over %d bytes", maxLine)
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			line = long
		}
		if ferr := fn(line, br); ferr != nil {
			return ferr
		}
		long = nil
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
	}
}
