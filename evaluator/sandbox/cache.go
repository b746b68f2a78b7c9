package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/internal/logctx"
)

// Cache is a writable directory a Sandbox keeps between runs: a build
// cache, so that a worker's samples compile a repository's dependencies
// once. Runs with the same Key share a pool of such directories, each
// held by one run at a time (never by two at once) and handed to a later
// run when it ends; a Sandbox keeps as many as it had runs at once. (A
// run can write into the directory it held, which later runs read: the
// price of keeping it.)
type Cache struct {
	// Key names the pool (the toolchain's: its caches are not another's).
	Key string
	// Target is where the directory is bound inside the sandbox.
	Target string
	// Dirs are made in it, owned by the sandbox's user, before each run;
	// Scratch (among them) are emptied after each run.
	Dirs, Scratch []string
	// Seed, if set, runs once per Key with a fresh directory as its
	// cache, from no repository's code (SourceDir must be empty); when it
	// exits 0 every new directory of the pool starts as a copy of that
	// one, so that a fresh worker does not spend its first sample on what
	// the seed built. A seed that fails leaves each directory empty.
	Seed *Spec `json:"-"`
}

func (c *Cache) validate() error {
	switch {
	case c.Key == "":
		return errors.New("empty key")
	case !filepath.IsAbs(c.Target) || underAny(c.Target, reservedDirs) || filepath.Clean(c.Target) == "/":
		return fmt.Errorf("target %q must be an absolute path outside the sandbox's own directories", c.Target)
	case c.Seed != nil && (c.Seed.SourceDir != "" || c.Seed.Cache != nil):
		return errors.New("the seed must not copy a repository nor have a cache of its own")
	}
	for _, d := range append(append([]string(nil), c.Dirs...), c.Scratch...) {
		if !filepath.IsLocal(d) {
			return fmt.Errorf("directory %q must be relative", d)
		}
	}
	return nil
}

// cachePools are a Sandbox's pools of Spec.Cache directories, by key.
type cachePools struct {
	mu    sync.Mutex
	pools map[string]*cachePool
}

type cachePool struct {
	seedOnce sync.Once
	seed     string // the seed directory; "" when there is none
	free     []string
	all      []string
}

func (p *cachePools) pool(key string) *cachePool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pools == nil {
		p.pools = map[string]*cachePool{}
	}
	cp := p.pools[key]
	if cp == nil {
		cp = &cachePool{}
		p.pools[key] = cp
	}
	return cp
}

// take returns a directory of c's pool that no other run holds, ready for
// a run, and the function that hands it back. A new one is a copy of the
// pool's seed (built on first use), made outside the lock: runs that
// start together do not wait on each other's copies.
func (p *cachePools) take(ctx context.Context, s *Sandbox, c *Cache) (string, func(), error) {
	cp := p.pool(c.Key)
	seed := ""
	if c.Seed != nil {
		cp.seedOnce.Do(func() { cp.seed = s.buildSeed(ctx, c) })
		seed = cp.seed
	}
	p.mu.Lock()
	var dir string
	if n := len(cp.free); n > 0 {
		dir = cp.free[n-1]
		cp.free = cp.free[:n-1]
	}
	p.mu.Unlock()
	if dir == "" {
		d, err := os.MkdirTemp(s.cfg.TempDir, "infill-cache-")
		if err != nil {
			return "", nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		p.mu.Lock()
		cp.all = append(cp.all, d)
		p.mu.Unlock()
		if seed != "" {
			if err := copyTree(seed, d, nil, nil); err != nil {
				p.give(cp, d)
				return "", nil, fmt.Errorf("%w: copying the seed cache: %v", ErrSetup, err)
			}
		}
		dir = d
	}
	release := func() {
		for _, sc := range c.Scratch {
			// The scratch directories are the run's own; the cache stays.
			_ = removeTree(filepath.Join(dir, sc))
		}
		p.give(cp, dir)
	}
	if err := s.prepareCache(dir, c); err != nil {
		release()
		return "", nil, err
	}
	return dir, release, nil
}

func (p *cachePools) give(cp *cachePool, dir string) {
	p.mu.Lock()
	cp.free = append(cp.free, dir)
	p.mu.Unlock()
}

// remove deletes every directory (Close).
func (p *cachePools) remove() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, cp := range p.pools {
		for _, d := range cp.all {
			errs = append(errs, removeTree(d))
		}
		if cp.seed != "" {
			errs = append(errs, removeTree(filepath.Dir(cp.seed)))
		}
	}
	p.pools = nil
	return errors.Join(errs...)
}

// prepareCache makes a cache's directories, the sandbox user's.
func (s *Sandbox) prepareCache(dir string, c *Cache) error {
	for _, d := range c.Dirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("%w: %v", ErrSetup, err)
		}
	}
	if s.asRoot {
		if err := chownTree(dir, s.cfg.UID, s.cfg.GID); err != nil {
			return fmt.Errorf("%w: %v", ErrSetup, err)
		}
	}
	return nil
}

// buildSeed runs c.Seed with a fresh directory as its cache and returns
// that directory, or "" when the seed could not be built (each cache then
// starts empty).
func (s *Sandbox) buildSeed(ctx context.Context, c *Cache) string {
	base, err := os.MkdirTemp(s.cfg.TempDir, "infill-cache-seed-")
	if err != nil {
		return ""
	}
	dir := filepath.Join(base, "cache")
	if err := s.prepareCache(dir, c); err != nil {
		_ = removeTree(base)
		return ""
	}
	if err := os.Chmod(base, 0o755); err != nil { // the sandbox's user binds dir
		_ = removeTree(base)
		return ""
	}
	seed := *c.Seed
	seed.Cache = c
	res, err := s.runCold(ctx, &seed, dir)
	if err != nil || res.Status != StatusExited || res.ExitCode != 0 {
		logctx.From(ctx, s.log).Warn("sandbox: the seed cache failed to build; each cache starts empty",
			zap.String("cache", c.Key), zap.Error(err), zap.String("output", lastLine(res.Stdout+"\n"+res.Stderr)))
		_ = removeTree(base)
		return ""
	}
	for _, sc := range c.Scratch {
		_ = removeTree(filepath.Join(dir, sc))
	}
	return dir
}

// Reachable says why the sandbox's user could not reach dir: started as
// root, bubblewrap runs as Config.UID, which must be able to search every
// directory above dir and read it (a directory under root's 0700 home is
// out of its reach); otherwise it runs as the caller, who can. A test
// runner asks before it binds a directory it may go without.
func (s *Sandbox) Reachable(dir string) error {
	if !s.asRoot {
		return nil
	}
	return reachable(dir, s.cfg.UID, s.cfg.GID)
}

// SystemDir reports a path every sandbox shows already, read-only (/usr,
// /bin, /lib, ...): a toolchain there needs no bind.
func SystemDir(p string) bool {
	return underAny(p, systemDirs)
}
