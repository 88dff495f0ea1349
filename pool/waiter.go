package pool

// grantKind says what a waiting Get was given.
type grantKind int

const (
	// grantConn hands over a returned connection, which stays checked out.
	grantConn grantKind = iota
	// grantDial hands over a freed slot: the waiter may dial a connection of its own.
	grantDial
	// grantClosed tells the waiter the pool was closed.
	grantClosed
)

// grant is what a waiter receives, once.
type grant[C Conn] struct {
	kind grantKind
	conn C // set for grantConn
}

// waiter is a Get blocked until a connection or slot frees up. It is granted at most
// once, under Pool.mu, and its buffered channel means granting never blocks.
type waiter[C Conn] struct {
	ready      chan grant[C]
	prev, next *waiter[C]
	queued     bool // in the pool's waitQueue; false once granted or removed
}

func newWaiter[C Conn]() *waiter[C] {
	return &waiter[C]{ready: make(chan grant[C], 1)}
}

// waitQueue is a FIFO of waiters that also supports removing a waiter from the middle,
// for a Get whose context ends. It is an intrusive list so neither operation allocates.
type waitQueue[C Conn] struct {
	head, tail *waiter[C]
	n          int
}

func (q *waitQueue[C]) len() int { return q.n }

func (q *waitQueue[C]) pushBack(w *waiter[C]) {
	w.prev, w.next = q.tail, nil
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
	w.queued = true
	q.n++
}

// popFront removes and returns the longest waiting waiter, or nil.
func (q *waitQueue[C]) popFront() *waiter[C] {
	w := q.head
	if w != nil {
		q.remove(w)
	}
	return w
}

// remove takes w, which must be queued, out of the queue.
func (q *waitQueue[C]) remove(w *waiter[C]) {
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	w.queued = false
	q.n--
}
