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
// uses for a file sent as a digest it does not hold.
const MissingContentType = "MISSING_CONTENT"

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
// for any other error.
func MissingContent(err error) []string {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.FailedPrecondition {
		return nil
	}
	var paths []string
	for _, d := range st.Details() {
		pf, ok := d.(*errdetails.PreconditionFailure)
		if !ok {
			continue
		}
		for _, v := range pf.GetViolations() {
			if v.GetType() == MissingContentType && v.GetSubject() != "" {
				paths = append(paths, v.GetSubject())
			}
		}
	}
	return paths
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
	// digests maps each path this client replaced by a digest to it.
	digests map[string]string
	// sent lists the digests of files sent with content.
	sent []string
}

// prepare replaces content the server is believed to hold by its digest,
// except for the forced paths.
func (c *Client) prepare(repo *infillv1.Repository, forced map[string]bool) prepared {
	if !c.cfg.ContentDigests || repo == nil {
		return prepared{repo: repo}
	}
	p := prepared{digests: map[string]string{}}
	files := make([]*infillv1.File, 0, len(repo.GetFiles()))
	for _, f := range repo.GetFiles() {
		src, ok := f.GetSource().(*infillv1.File_Content)
		if !ok || len(src.Content) <= digestLen {
			files = append(files, f)
			continue
		}
		d := Digest(src.Content)
		if forced[f.GetPath()] || !c.held.has(d) {
			files = append(files, f)
			p.sent = append(p.sent, d)
			continue
		}
		p.digests[f.GetPath()] = d
		files = append(files, &infillv1.File{
			Path:     f.GetPath(),
			Source:   &infillv1.File_Digest{Digest: d},
			Language: f.GetLanguage(),
		})
	}
	p.repo = shallowRepository(repo, files)
	return p
}

// accept records that the server took the content sent in p.
func (c *Client) accept(p prepared) {
	if len(p.sent) > 0 {
		c.held.add(p.sent)
	}
}

// resendable reports whether every path was replaced by a digest by this
// client, so that its content is at hand.
func (p prepared) resendable(paths []string) bool {
	for _, path := range paths {
		if _, ok := p.digests[path]; !ok {
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
