package testkit

import (
	"errors"
	"sync"

	"github.com/respire/respire/observe"
)

// ConnErrs is an Observer that keeps the errors of the Conn events of one kind it is
// given (Kind; nil errors included), for tests of what a client reports: the
// re-authentications of a credential rotation, say. Set Kind before use; it is safe
// for concurrent use.
type ConnErrs struct {
	observe.Base
	Kind observe.ConnKind
	mu   sync.Mutex
	errs []error
}

// Conn keeps e's error if e is of the kind kept.
func (r *ConnErrs) Conn(e observe.Conn) {
	if e.Kind != r.Kind {
		return
	}
	r.mu.Lock()
	r.errs = append(r.errs, e.Err)
	r.mu.Unlock()
}

// Errs returns the errors kept so far, in the order they came.
func (r *ConnErrs) Errs() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

// Matching returns the errors kept so far that match target (errors.Is).
func (r *ConnErrs) Matching(target error) []error {
	var out []error
	for _, err := range r.Errs() {
		if errors.Is(err, target) {
			out = append(out, err)
		}
	}
	return out
}
