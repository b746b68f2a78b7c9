package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/infill-dev/infill/contextpack"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// payloadInfo describes one generated payload file (payloads.json).
type payloadInfo struct {
	Name         string `json:"name"` // e.g. n50-digest
	N            int    `json:"n"`
	Variant      string `json:"variant"` // full or digest
	File         string `json:"file"`    // JSON for ghz -D (protojson CompleteRequest)
	Files        int    `json:"files"`
	ContentBytes int    `json:"content_bytes"` // source bytes in the repository
	RequestBytes int    `json:"request_bytes"` // protobuf size of the request
	CursorPath   string `json:"cursor_path"`
	CursorLine   int    `json:"cursor_line"`
	CursorColumn int    `json:"cursor_column"`
	MaxTokens    int    `json:"max_tokens"`
}

func payloadCmd(args []string) error {
	fl := flag.NewFlagSet("payload", flag.ContinueOnError)
	src := fl.String("src", "", "source tree the repository is taken from (default: $(go env GOROOT)/src)")
	cursor := fl.String("cursor", "net/http/client.go", "cursor file, relative to -src")
	ns := fl.String("n", "1,50,500", "repository sizes in files, comma-separated")
	maxTokens := fl.Int("max-tokens", 32, "generation.max_tokens of every request")
	maxFileBytes := fl.Int("max-file-bytes", 64<<10, "skip larger files (generated tables; an IDE plugin would too)")
	repoName := fl.String("repo", "go", "repository name sent in the request")
	out := fl.String("out", "", "output directory (required)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *out == "" || *src == "" {
		return errors.New("-src and -out are required")
	}
	var sizes []int
	for _, s := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-n: %q is not a positive number", s)
		}
		sizes = append(sizes, n)
	}
	files, err := collectGoFiles(*src, *maxFileBytes)
	if err != nil {
		return err
	}
	cur := path.Clean(*cursor)
	ordered, err := orderByDistance(files, cur)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	curContent, err := os.ReadFile(filepath.Join(*src, filepath.FromSlash(cur)))
	if err != nil {
		return err
	}
	line, col, err := pickCursor(string(curContent))
	if err != nil {
		return fmt.Errorf("%s: %w", cur, err)
	}
	var infos []payloadInfo
	for _, n := range sizes {
		if n > len(ordered) {
			return fmt.Errorf("-n %d: only %d usable files under %s", n, len(ordered), *src)
		}
		req := &infillv1.CompleteRequest{
			Repository: &infillv1.Repository{Name: *repoName},
			Cursor: &infillv1.Cursor{Path: cur, Line: uint32(line), Column: uint32(col),
				Encoding: infillv1.PositionEncoding_POSITION_ENCODING_UTF16},
			Generation: &infillv1.GenerationOptions{MaxTokens: uint32(*maxTokens), Temperature: proto.Float32(0)},
			ClientId:   "infill-ghz-bench",
		}
		chosen := append([]string(nil), ordered[:n]...)
		sort.Strings(chosen) // an IDE lists files in tree order, not by relevance
		total := 0
		for _, p := range chosen {
			b, err := os.ReadFile(filepath.Join(*src, filepath.FromSlash(p)))
			if err != nil {
				return err
			}
			total += len(b)
			req.Repository.Files = append(req.Repository.Files, &infillv1.File{Path: p, Content: proto.String(string(b))})
		}
		variants := []string{"full"}
		if n > 1 {
			variants = append(variants, "digest")
		}
		for _, v := range variants {
			r := req
			if v == "digest" {
				r = digestVariant(req)
			}
			name := fmt.Sprintf("n%d-%s", n, v)
			file := filepath.Join(*out, name+".json")
			if err := writePayload(file, r); err != nil {
				return err
			}
			infos = append(infos, payloadInfo{Name: name, N: n, Variant: v, File: file, Files: n, ContentBytes: total,
				RequestBytes: proto.Size(r), CursorPath: cur, CursorLine: line, CursorColumn: col, MaxTokens: *maxTokens})
		}
	}
	b, err := json.MarshalIndent(infos, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(*out, "payloads.json"), append(b, '\n')); err != nil {
		return err
	}
	for _, in := range infos {
		fmt.Printf("%-14s %4d files  %8d source bytes  %8d request bytes  cursor %s:%d:%d\n",
			in.Name, in.Files, in.ContentBytes, in.RequestBytes, in.CursorPath, in.CursorLine, in.CursorColumn)
	}
	return nil
}

// digestVariant returns req with every file but the cursor file sent as a
// digest, as a client does once the server holds the content.
func digestVariant(req *infillv1.CompleteRequest) *infillv1.CompleteRequest {
	r := proto.Clone(req).(*infillv1.CompleteRequest)
	for _, f := range r.GetRepository().GetFiles() {
		if f.Content != nil && f.GetPath() != r.GetCursor().GetPath() {
			f.Content, f.Digest = nil, contextpack.Digest(f.GetContent())
		}
	}
	return r
}

// snapshotVariant returns req as a client that holds the server's
// snapshot of its file list sends it: the cursor file alone, on base.
func snapshotVariant(req *infillv1.CompleteRequest, base string) *infillv1.CompleteRequest {
	r := proto.Clone(req).(*infillv1.CompleteRequest)
	var cur []*infillv1.File
	for _, f := range r.Repository.Files {
		if f.GetPath() == r.GetCursor().GetPath() {
			cur = append(cur, f)
		}
	}
	r.Repository.Files, r.Repository.Base = cur, base
	return r
}

func writePayload(file string, req *infillv1.CompleteRequest) error {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(req)
	if err != nil {
		return err
	}
	return writeFileAtomic(file, b)
}

// readPayload reads a payload file written by writePayload.
func readPayload(file string) (*infillv1.CompleteRequest, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	req := &infillv1.CompleteRequest{}
	if err := protojson.Unmarshal(b, req); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return req, nil
}

func writeFileAtomic(file string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// collectGoFiles lists the non-test Go files under root (slash paths
// relative to it), leaving out testdata and vendor trees, files larger than
// maxBytes and files that are not UTF-8 text.
func collectGoFiles(root string, maxBytes int) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "vendor" || (strings.HasPrefix(n, ".") && p != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() > int64(maxBytes) || info.Size() == 0 {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !utf8.Valid(b) {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	return out, err
}

// orderByDistance puts the cursor file first, then files by directory
// distance from it (same package, then neighbours), then path: a repository
// around the file being edited.
func orderByDistance(files []string, cursor string) ([]string, error) {
	found := false
	for _, f := range files {
		if f == cursor {
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("cursor file %s is not among the usable files", cursor)
	}
	cdir := strings.Split(path.Dir(cursor), "/")
	dist := func(f string) int {
		d := strings.Split(path.Dir(f), "/")
		common := 0
		for common < len(d) && common < len(cdir) && d[common] == cdir[common] {
			common++
		}
		return len(d) + len(cdir) - 2*common
	}
	out := append([]string(nil), files...)
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i] == cursor) != (out[j] == cursor) {
			return out[i] == cursor
		}
		di, dj := dist(out[i]), dist(out[j])
		if di != dj {
			return di < dj
		}
		return out[i] < out[j]
	})
	return out, nil
}

// pickCursor places the cursor at the start of a statement inside a
// function body, at or after the middle of the file (0-based line, column
// in UTF-16 units after the indentation).
func pickCursor(content string) (line, col int, err error) {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(content))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	inFunc := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "func "):
			inFunc = !strings.HasSuffix(strings.TrimSpace(l), "}")
		case l == "}":
			inFunc = false
		case inFunc && i >= len(lines)/2 && strings.HasPrefix(l, "\t") && strings.TrimSpace(l) != "" &&
			!strings.HasPrefix(strings.TrimSpace(l), "//") && !strings.HasPrefix(strings.TrimSpace(l), "}"):
			indent := len(l) - len(strings.TrimLeft(l, "\t "))
			return i, indent, nil
		}
	}
	return 0, 0, errors.New("no statement inside a function in the second half of the file")
}
