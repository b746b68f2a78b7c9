package infill

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"

	"google.golang.org/genproto/googleapis/rpc/errdetails"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// MissingContentType is the PreconditionFailure violation type the server
// uses for a file sent as a digest it does not hold; MissingContentMoreType
// says that more such files were left out of the list (a list too long
// for one error), so every file sent as a digest needs its content.
const (
	MissingContentType     = "MISSING_CONTENT"
	MissingContentMoreType = "MISSING_CONTENT_MORE"
)

// digestLen is the length of "sha256:" plus 64 hex digits; content no
// longer than this is always sent as it is.
const digestLen = len("sha256:") + 64

// Digest returns the digest that stands for content in File.digest:
// "sha256:" followed by 64 lowercase hex digits of its SHA-256.
func Digest(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// MissingContent returns the paths the server asked to resend with content:
// the subjects of "MISSING_CONTENT" violations in the google.rpc.
// PreconditionFailure details of a FAILED_PRECONDITION error. It returns nil
// for any other error. When more reports true, the server held even more
// of the digests than it listed (MissingContentMoreType): resend every file
// sent as a digest.
func MissingContent(err error) (paths []string, more bool) {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.FailedPrecondition {
		return nil, false
	}
	for _, d := range st.Details() {
		pf, ok := d.(*errdetails.PreconditionFailure)
		if !ok {
			continue
		}
		for _, v := range pf.GetViolations() {
			switch {
			case v.GetType() == MissingContentType && v.GetSubject() != "":
				paths = append(paths, v.GetSubject())
			case v.GetType() == MissingContentMoreType:
				more = true
			}
		}
	}
	return paths, more
}

// digestMemo remembers the digest of each path's last content, so that a
// caller sending its whole repository on every keystroke does not have
// every file hashed again: at 500 files (2.5 MB) the hashing was most of
// the 4 ms a call cost the client (BenchmarkClientTyping). A hit compares
// the content with the one remembered, which costs nothing when the caller
// passes the same string again (Go compares the data pointers first) and a
// memory compare when it passes an equal copy. The memo holds the strings
// the caller passed, without copying them, up to max bytes in all; past
// that it forgets everything, as digestSet does, and content larger than
// max is hashed every time.
type digestMemo struct {
	mu    sync.Mutex
	m     map[string]memoEntry // by path
	bytes int
	max   int
}

type memoEntry struct{ content, digest string }

// defaultMemoBytes bounds a digestMemo: a few repositories' worth.
const defaultMemoBytes = 64 << 20

// digests returns the digest of each file of files that has content,
// indexed like files ("" for the others).
func (dm *digestMemo) digests(files []*infillv1.File) []string {
	out := make([]string, len(files))
	var miss []int
	dm.mu.Lock()
	for i, f := range files {
		if f.Content == nil {
			continue
		}
		if e, ok := dm.m[f.GetPath()]; ok && e.content == f.GetContent() {
			out[i] = e.digest
		} else {
			miss = append(miss, i)
		}
	}
	dm.mu.Unlock()
	if len(miss) == 0 {
		return out
	}
	for _, i := range miss {
		out[i] = Digest(files[i].GetContent())
	}
	dm.mu.Lock()
	defer dm.mu.Unlock()
	for _, i := range miss {
		f := files[i]
		if len(f.GetContent()) > dm.max {
			continue
		}
		if dm.bytes+len(f.GetContent()) > dm.max || dm.m == nil {
			dm.m, dm.bytes = map[string]memoEntry{}, 0
		}
		if old, ok := dm.m[f.GetPath()]; ok {
			dm.bytes -= len(old.content)
		}
		dm.m[f.GetPath()] = memoEntry{content: f.GetContent(), digest: out[i]}
		dm.bytes += len(f.GetContent())
	}
	return out
}

// digestSet remembers digests of content the server accepted from this
// client. When full it forgets everything: the worst case is sending
// content again.
type digestSet struct {
	mu  sync.Mutex
	max int
	m   map[string]struct{}
}

func newDigestSet(max int) *digestSet {
	return &digestSet{max: max, m: map[string]struct{}{}}
}

func (s *digestSet) has(d string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[d]
	return ok
}

func (s *digestSet) add(ds []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m)+len(ds) > s.max {
		clear(s.m)
	}
	for _, d := range ds {
		if len(s.m) >= s.max {
			break
		}
		s.m[d] = struct{}{}
	}
}

func (s *digestSet) remove(d string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, d)
}

// prepared is the repository as one attempt sends it.
type prepared struct {
	repo *infillv1.Repository
	orig *infillv1.Repository
	// digests maps each path this client replaced by a digest to it (for
	// an edit, the digest of the text it applies to).
	digests map[string]string
	// sent lists the digests of files sent with content.
	sent []string
	// With TransferDeltas: the repository's name, the whole file list as
	// the server will hold it, and the base the attempt used ("" for none).
	repoName string
	whole    map[string]fileKey
	base     string
	// text is the cursor file's text as this attempt sends it, for the
	// next keystroke's edit (empty path: none).
	text lastText
}

// prepare builds what one attempt sends: with TransferDeltas and a
// snapshot of the repository from an earlier response (unless noBase),
// only the files that changed since, on that base; with TransferDeltas or
// TransferDigests, content the server is believed to hold as its
// digest, and the cursor file (at path cursor), when the server holds its
// last text from this client, as an edit to that. Forced paths go with
// content.
func (c *Client) prepare(repo *infillv1.Repository, cursor string, forced map[string]bool, noBase bool) prepared {
	p := prepared{repo: repo, orig: repo}
	if repo == nil || c.cfg.Transfer == TransferWhole {
		return p
	}
	files := repo.GetFiles()
	var removed []string
	if c.cfg.Transfer.snapshots() && repo.GetBase() == "" && len(repo.GetRemoved()) == 0 {
		p.repoName, p.whole = repo.GetName(), wholeList(files, c.memo.digests(files))
		if sn, ok := c.snaps.get(p.repoName); ok && !noBase {
			files, removed = changedFiles(files, p.whole, sn, forced)
			p.base = sn.id
		}
	}
	if c.cfg.Transfer.digests() {
		p.digests = map[string]string{}
		var sums []string // by index in files, when there is no whole list
		if p.whole == nil {
			sums = c.memo.digests(files)
		}
		out := make([]*infillv1.File, 0, len(files))
		for k, f := range files {
			if f.Content == nil || f.GetDigest() != "" || len(f.GetContent()) <= digestLen {
				out = append(out, f)
				continue
			}
			var d string
			if p.whole != nil {
				// files may be a subset of the whole list (changedFiles), so
				// look the digest up by path rather than by index.
				d = p.whole[f.GetPath()].digest
			} else {
				d = sums[k]
			}
			if f.GetPath() == cursor {
				p.text = lastText{path: cursor, digest: d, content: f.GetContent()}
			}
			if forced[f.GetPath()] || !c.held.has(d) {
				sent := f
				if ef, ok := c.edited(repo.GetName(), cursor, f, d, forced); ok {
					sent = ef
					p.digests[f.GetPath()] = ef.GetDigest()
				}
				out = append(out, sent)
				p.sent = append(p.sent, d)
				continue
			}
			p.digests[f.GetPath()] = d
			out = append(out, &infillv1.File{
				Path:     f.GetPath(),
				Digest:   d,
				Language: f.GetLanguage(),
			})
		}
		files = out
		if p.text.path == "" && p.whole != nil {
			// The cursor file is the base's: its text is the next edit's.
			for _, f := range repo.GetFiles() {
				if f.GetPath() == cursor && f.Content != nil {
					p.text = lastText{path: cursor, digest: p.whole[cursor].digest, content: f.GetContent()}
					break
				}
			}
		}
	}
	p.repo = shallowRepository(repo, files)
	if p.base != "" {
		p.repo.Base, p.repo.Removed = p.base, removed
	}
	return p
}

// edited returns f (whose content has digest d) as an edit to the last
// text of its path this client sent for repository repo, when f is the
// cursor file (only its text is kept), the server holds that text and the
// edit is much smaller than f.
func (c *Client) edited(repo, cursor string, f *infillv1.File, d string, forced map[string]bool) (*infillv1.File, bool) {
	if f.GetPath() != cursor {
		return nil, false
	}
	last, ok := c.texts.get(repo)
	if !ok || forced[f.GetPath()] || last.path != f.GetPath() || last.digest == d || !c.held.has(last.digest) {
		return nil, false
	}
	return asEdit(f, last)
}

// accept records that the server took the content sent in p and, when it
// named the file list (snapshot), that list as the repository's base.
func (c *Client) accept(p prepared, snapshot string) {
	if len(p.sent) > 0 {
		c.held.add(p.sent)
	}
	if p.text.path != "" {
		c.texts.set(p.orig.GetName(), p.text)
	}
	if p.whole != nil && snapshot != "" {
		c.snaps.set(p.repoName, clientSnap{id: snapshot, files: p.whole})
	}
}

// resendable reports whether the caller gave content for every path, so
// that it can be resent.
func (p prepared) resendable(paths []string) bool {
	has := make(map[string]bool, len(p.orig.GetFiles()))
	for _, f := range p.orig.GetFiles() {
		if f.Content != nil {
			has[f.GetPath()] = true
		}
	}
	for _, path := range paths {
		if !has[path] {
			return false
		}
	}
	return true
}

// shallowRepository copies repo's fields except files, which it replaces.
func shallowRepository(repo *infillv1.Repository, files []*infillv1.File) *infillv1.Repository {
	src := repo.ProtoReflect()
	dst := src.New()
	filesField := src.Descriptor().Fields().ByName("files")
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd != filesField {
			dst.Set(fd, v)
		}
		return true
	})
	out := dst.Interface().(*infillv1.Repository)
	out.Files = files
	return out
}
