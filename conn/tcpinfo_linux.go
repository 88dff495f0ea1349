//go:build linux

package conn

import (
	"syscall"
	"unsafe"
)

// kernelCounts says whether kernelReceived works here.
const kernelCounts = true

// tcpInfoBytesReceived is the offset of tcpi_bytes_received in struct tcp_info (Linux
// 4.1 and later): the count of bytes the socket has received in order, which is what
// the application can read, plus one for the peer's FIN once it has closed.
const (
	tcpInfoBytesReceived = 128
	tcpInfoSize          = 232
)

// tcpEstablished is tcpi_state of a connection neither end has closed or reset.
const tcpEstablished = 1

// kernelReceived returns how many bytes the socket has received since it was opened,
// read or not, and whether the connection is still established: the peer has neither
// closed it nor reset it. A reset counts no byte.
func kernelReceived(raw syscall.RawConn) (int64, bool, error) {
	var info [tcpInfoSize]byte
	var serr error
	err := raw.Control(func(fd uintptr) {
		size := uint32(len(info))
		_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&size)), 0)
		switch {
		case errno != 0:
			serr = errno
		case size < tcpInfoBytesReceived+8:
			serr = ErrCannotMeasure // a kernel older than 4.1
		}
	})
	if err != nil {
		return 0, false, err
	}
	if serr != nil {
		return 0, false, serr
	}
	return int64(*(*uint64)(unsafe.Pointer(&info[tcpInfoBytesReceived]))), info[0] == tcpEstablished, nil
}
