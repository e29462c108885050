// Package freeport finds TCP ports on loopback that nobody listens on: for the servers the tests
// and the benchmark start, and for addresses a test expects to be closed.
package freeport

import (
	"fmt"
	"net"
	"strconv"
)

// Loopback returns a TCP port that was free on 127.0.0.1 a moment ago. Another process may take
// it before the caller binds it: a caller that starts a server on it retries on a new one.
func Loopback() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Addr returns "127.0.0.1:PORT" for a port Loopback found.
func Addr() (string, error) {
	port, err := Loopback()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}
