package pipeline

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/inference"
)

// Target is one backend the pipeline routes completions to.
type Target struct {
	// Name identifies it in health, metrics and logs.
	Name    string
	Backend Backend
	// Admission bounds the generations sent to it at once (its
	// parallelism) and the requests waiting for it.
	Admission AdmissionConfig
	// Models it serves; empty: every model.
	Models []string
}

// Routing is how the pipeline orders the backends a request may go to.
type Routing int

// Routing policies.
const (
	// RouteAffinity orders the backends by rendezvous (highest random
	// weight) hashing of the request's repository and cursor file, so a
	// session's keystrokes reach the backend whose KV cache holds its
	// prompt's prefix, and a backend that joins or leaves moves only its
	// own share of sessions.
	RouteAffinity Routing = iota
	// RouteRoundRobin starts each request at the next backend in turn
	// (for comparison: it spreads load evenly and ignores the cache).
	RouteRoundRobin
)

func (r Routing) String() string {
	if r == RouteRoundRobin {
		return "round-robin"
	}
	return "affinity"
}

// ParseRouting reads "affinity" or "round-robin".
func ParseRouting(s string) (Routing, error) {
	switch s {
	case "affinity":
		return RouteAffinity, nil
	case "round-robin":
		return RouteRoundRobin, nil
	}
	return 0, fmt.Errorf("routing %q: want affinity or round-robin", s)
}

// Health states of a target, as the server's health checks last said.
const (
	healthUnknown int32 = iota // not checked yet: routed to
	healthUp
	healthDown
)

// Why a request left the backend it would have gone to first (its
// rendezvous choice), for metrics.
const (
	spillDown        = iota // health said the backend does not serve
	spillFull               // its admission refused at once (slots and queue full, or no start in time)
	spillUnreachable        // a request to it could not connect
	spillLoad               // it was over its share of the load (LoadBound)
	spillReasons
)

// target is a Target with its admission gate, health and counters.
type target struct {
	Target
	gate   *gate
	health atomic.Int32
	// unreachable is when a request last failed to connect to it (unix
	// ns), until a health check that began later says it serves: it is
	// tried last meanwhile.
	unreachable atomic.Int64
	// generations sent to it, by how they ended.
	ok, failed, cancelled, notSent atomic.Uint64
	spilled                        [spillReasons]atomic.Uint64
}

func (t *target) serves(model string) bool {
	return len(t.Models) == 0 || slices.Contains(t.Models, model)
}

// routable says whether requests go to t (rather than only when no
// backend is).
func (t *target) routable() bool {
	return t.health.Load() != healthDown && t.unreachable.Load() == 0
}

// routeKey is what affinity hashes: the repository and the cursor file,
// the two things a session's prompt prefix follows.
func routeKey(req *Request) string { return req.Context.RepoName + "\x00" + req.Context.Cursor.Path }

// weight is target name's rendezvous weight for key: FNV-1a over name and
// key, finished with splitmix64's mixer (FNV alone spreads keys that
// differ in their last bytes poorly). Stable across processes, so every
// infill replica sends a session to the same backend.
func weight(name, key string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * prime
	}
	h = (h ^ 0) * prime
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * prime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// route returns the backends a request for model may go to, in the order
// to try them, and the one it would go to first whatever their health
// (for the spill count). Backends the health checks or a failed connection
// took out come only when no other serves the model.
func (p *Pipeline) route(req *Request, model string) (order []*target, first *target, err error) {
	eligible := make([]*target, 0, len(p.targets))
	for _, t := range p.targets {
		if t.serves(model) {
			eligible = append(eligible, t)
		}
	}
	if len(eligible) == 0 {
		return nil, nil, &inference.ModelError{Model: model, Hint: "no backend of this server serves it (their models lists)"}
	}
	switch {
	case len(eligible) == 1:
	case p.cfg.Routing == RouteRoundRobin:
		n := int(p.rr.Add(1) % uint64(len(eligible)))
		eligible = append(eligible[n:], eligible[:n]...)
	default:
		key := routeKey(req)
		w := make(map[*target]uint64, len(eligible))
		for _, t := range eligible {
			w[t] = weight(t.Name, key)
		}
		slices.SortStableFunc(eligible, func(a, b *target) int { return cmp.Compare(w[b], w[a]) })
	}
	first = eligible[0]
	order = make([]*target, 0, len(eligible))
	for _, t := range eligible {
		if t.routable() {
			order = append(order, t)
		}
	}
	if len(order) == 0 {
		order = eligible // none serves: try them all, for an honest UNAVAILABLE
	}
	return order, first, nil
}

// overBound reports whether t, its slots all taken, holds LoadBound times
// its share (by slots) of the load of the backends in order, counting the
// new request: it should go to the next backend. A backend with a free
// slot, or without admission, is never over.
func (p *Pipeline) overBound(t *target, order []*target) bool {
	load, slots := t.gate.load()
	if slots == 0 || load < slots {
		return false
	}
	total, all := 0, 0
	for _, o := range order {
		l, s := o.gate.load()
		total, all = total+l, all+s
	}
	if all == 0 {
		return false
	}
	return float64(load) >= math.Ceil(p.cfg.LoadBound*float64(slots)*float64(total+1)/float64(all))
}

// SetHealth records a health check of the backend named name: up is the
// check's verdict, began when the check began. A backend a failed
// connection took out of the order comes back only with a verdict up from
// a check that began after that failure.
func (p *Pipeline) SetHealth(name string, up bool, began time.Time) {
	for _, t := range p.targets {
		if t.Name != name {
			continue
		}
		if !up {
			t.health.Store(healthDown)
			return
		}
		t.health.Store(healthUp)
		if u := t.unreachable.Load(); u != 0 && began.UnixNano() > u {
			t.unreachable.CompareAndSwap(u, 0)
		}
	}
}

// Targets returns the names of the backends, in configuration order.
func (p *Pipeline) Targets() []string {
	names := make([]string, len(p.targets))
	for i, t := range p.targets {
		names[i] = t.Name
	}
	return names
}

// AffinityOrder is the order affinity routing tries the backends named
// names in for a request in repository repo with its cursor in path
// (before health and load have their say): where a file's sessions go.
func AffinityOrder(names []string, repo, path string) []string {
	key := routeKey(&Request{Context: contextpack.Request{RepoName: repo, Cursor: contextpack.Cursor{Path: path}}})
	out := slices.Clone(names)
	slices.SortStableFunc(out, func(a, b string) int { return cmp.Compare(weight(b, key), weight(a, key)) })
	return out
}
