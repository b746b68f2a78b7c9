// Command crosscheck compares contextpack/tokenizer with the Hugging Face
// reference output written by reference.js (see crosscheck.sh) and reports
// mismatching files, totals and the Go tokenizer's throughput.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/infill-dev/infill/contextpack/tokenizer"
)

type record struct {
	Path         string `json:"path"`
	Count        int    `json:"count"`
	SHA          string `json:"sha256"`
	SpecialCount int    `json:"special_count"`
	SpecialSHA   string `json:"special_sha256"`
}

func hash(ids []int) string {
	var b []byte
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func main() {
	dir := flag.String("dir", "", "directory the reference was computed on")
	ref := flag.String("ref", "", "reference JSON lines from reference.js")
	flag.Parse()
	if err := run(*dir, *ref); err != nil {
		fmt.Fprintln(os.Stderr, "crosscheck:", err)
		os.Exit(1)
	}
}

func run(dir, ref string) error {
	tk, err := tokenizer.Qwen25()
	if err != nil {
		return err
	}
	f, err := os.Open(ref)
	if err != nil {
		return err
	}
	defer f.Close()
	var files, bytes, tokens, bad int
	var spent time.Duration
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(dir, r.Path))
		if err != nil {
			return err
		}
		text := string(b)
		start := time.Now()
		ids := tk.Encode(text)
		spent += time.Since(start)
		sids := tk.EncodeWithSpecial(text)
		files++
		bytes += len(b)
		tokens += len(ids)
		if len(ids) != r.Count || hash(ids) != r.SHA {
			bad++
			fmt.Printf("MISMATCH Encode %s: %d tokens, reference %d\n", r.Path, len(ids), r.Count)
		}
		if len(sids) != r.SpecialCount || hash(sids) != r.SpecialSHA {
			bad++
			fmt.Printf("MISMATCH EncodeWithSpecial %s: %d tokens, reference %d\n", r.Path, len(sids), r.SpecialCount)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	fmt.Printf("%d files, %.1f MB, %d tokens, %d mismatches; Encode %.2f M tok/s (one goroutine)\n",
		files, float64(bytes)/1e6, tokens, bad, float64(tokens)/spent.Seconds()/1e6)
	if bad > 0 {
		return fmt.Errorf("%d mismatches", bad)
	}
	return nil
}
