package freeport_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/freeport"
)

// A port Loopback returns can be listened on, and nobody answers at an Addr.
func TestAPortFoundIsFree(t *testing.T) {
	port, err := freeport.Loopback()
	require.NoError(t, err)
	require.Positive(t, port)
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	require.NoError(t, err)
	require.NoError(t, l.Close())

	addr, err := freeport.Addr()
	require.NoError(t, err)
	_, err = net.Dial("tcp", addr)
	require.Error(t, err, "nobody listens at %s", addr)
}
