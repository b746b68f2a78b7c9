package evaluator

import (
	"context"
	"fmt"

	"github.com/infill-dev/infill/evaluator/sandbox"
)

// Pool is an Executor that bounds the sandbox runs in flight across every
// Runner sharing it: a server holds one, sized by its worker count, so that
// N concurrent evaluation calls still run at most that many sandboxes at
// once. Waiting runs are served in arrival order and give up when their
// context ends.
type Pool struct {
	exec  Executor
	slots chan struct{}
}

// NewPool returns a Pool of size slots over exec.
func NewPool(exec Executor, size int) (*Pool, error) {
	if exec == nil || size < 1 {
		return nil, fmt.Errorf("%w: a pool needs an Executor and at least one slot", ErrInvalidConfig)
	}
	return &Pool{exec: exec, slots: make(chan struct{}, size)}, nil
}

// Size is the most runs in flight.
func (p *Pool) Size() int { return cap(p.slots) }

// Run waits for a free slot, then runs spec.
func (p *Pool) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return sandbox.Result{}, ctx.Err()
	}
	defer func() { <-p.slots }()
	return p.exec.Run(ctx, spec)
}
