package infill

import (
	"sync"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// SnapshotType is the PreconditionFailure violation type the server uses
// for a Repository.base it does not hold.
const SnapshotType = "SNAPSHOT"

// UnknownSnapshot reports whether err is the server's answer to a
// Repository.base it does not hold (FAILED_PRECONDITION with a "SNAPSHOT"
// violation): the whole file list must be sent again.
func UnknownSnapshot(err error) bool {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.FailedPrecondition {
		return false
	}
	for _, d := range st.Details() {
		if pf, ok := d.(*errdetails.PreconditionFailure); ok {
			for _, v := range pf.GetViolations() {
				if v.GetType() == SnapshotType {
					return true
				}
			}
		}
	}
	return false
}

// fileKey is what the server's snapshot holds of a file.
type fileKey struct{ digest, lang string }

// clientSnap is the file list the server holds under id.
type clientSnap struct {
	id    string
	files map[string]fileKey
}

// perRepo holds one value per repository name, safe for concurrent use.
// It holds at most maxRepos names; a new name past that forgets the rest
// (the worst case is sending a whole list or a file again).
type perRepo[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

// maxRepos bounds perRepo: repositories a client completes in at once.
const maxRepos = 64

func (p *perRepo[T]) get(repo string) (T, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[repo]
	return v, ok
}

func (p *perRepo[T]) set(repo string, v T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.m[repo]; !ok && (p.m == nil || len(p.m) >= maxRepos) {
		p.m = map[string]T{}
	}
	p.m[repo] = v
}

// forget drops repo's value if stale says it should go.
func (p *perRepo[T]) forget(repo string, stale func(T) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.m[repo]; ok && stale(v) {
		delete(p.m, repo)
	}
}

// wholeList is each file's digest and language as the server will see it;
// sums holds the digests of the files' content (digestMemo.digests).
func wholeList(files []*infillv1.File, sums []string) map[string]fileKey {
	m := make(map[string]fileKey, len(files))
	for i, f := range files {
		d := f.GetDigest()
		switch {
		case f.Content != nil:
			d = sums[i]
		case len(f.GetEdits()) > 0:
			// The caller's edits: the text they make is not known here, so
			// no snapshot's file matches it ("" is no digest).
			d = ""
		}
		m[f.GetPath()] = fileKey{digest: d, lang: f.GetLanguage()}
	}
	return m
}

// changedFiles keeps the files that differ from sn (or are forced) and lists the
// paths of sn that files lack.
func changedFiles(files []*infillv1.File, whole map[string]fileKey, sn clientSnap, forced map[string]bool) (kept []*infillv1.File, removed []string) {
	for _, f := range files {
		if k, ok := sn.files[f.GetPath()]; ok && k == whole[f.GetPath()] && k.digest != "" && !forced[f.GetPath()] {
			continue
		}
		kept = append(kept, f)
	}
	for p := range sn.files {
		if _, ok := whole[p]; !ok {
			removed = append(removed, p)
		}
	}
	return kept, removed
}
