//go:build !linux

package conn

import "syscall"

// kernelCounts is false: this platform's byte count of a socket is not read, so
// CatchUp reports ErrCannotMeasure.
const kernelCounts = false

func kernelReceived(syscall.RawConn) (int64, bool, error) { return 0, false, ErrCannotMeasure }
