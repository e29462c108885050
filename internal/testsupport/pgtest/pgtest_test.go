//go:build unix

package pgtest_test

import (
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/locktui/locktui/internal/testsupport/pgtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A server answers SQL on loopback, copies a database by template, and is gone with its
// directory after Stop.
func TestStartServesSQLAndStops(t *testing.T) {
	s := pgtest.Start(t)
	assert.Equal(t, "127.0.0.1:"+strconv.Itoa(s.Port), s.Addr)
	assert.Equal(t, "postgres://postgres@"+s.Addr+"/app", s.URL("app"))

	s.CreateDB(t, "app", "")
	s.Query(t, "app", "CREATE TABLE t (v int); INSERT INTO t VALUES (41), (1)")
	s.CreateDB(t, "copy", "app")
	assert.Equal(t, "42", s.Query(t, "copy", "SELECT sum(v) FROM t"), "the copy has the template's rows")
	assert.Equal(t, "off", s.Query(t, "app", "SHOW fsync"))
	assert.Equal(t, "127.0.0.1", s.Query(t, "app", "SHOW listen_addresses"))

	s.Stop()
	s.Stop() // idempotent; the cleanup calls it again
	_, err := net.DialTimeout("tcp", s.Addr, time.Second)
	assert.Error(t, err, "nothing listens on %s after Stop", s.Addr)
}

// BinDir finds the binaries this machine has; the suite needs them.
func TestBinDirFindsInitdbAndPostgres(t *testing.T) {
	dir, err := pgtest.BinDir()
	require.NoError(t, err)
	for _, name := range []string{"initdb", "postgres", "psql", "createdb"} {
		_, err := os.Stat(dir + "/" + name)
		assert.NoError(t, err, "%s in %s", name, dir)
	}
}
