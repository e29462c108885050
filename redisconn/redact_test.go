package redisconn_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/redisconn"
)

// leakyURLs are bad URLs with a password in them: each part of Open that can reject a URL (the
// URL parser, the scheme check, go-redis's ParseURL, ParseFailoverURL and ParseClusterURL) sees
// one of them. secret is the text that must never appear in the error.
var leakyURLs = []struct {
	url, secret string
}{
	{"redis://user:hunter2@host:notaport", "hunter2"}, // url.Parse: bad port
	{"redis://user:hun/ter2@host:6379", "hun"},        // url.Parse: its reason quotes a part of the password
	{"redis://user:hunter2@host:6379/x", "hunter2"},   // ParseURL: bad database
	{"redis://user:hunter2@host:6379?dial_timeout=soon", "hunter2"},
	{"redis://host:6379?password=hunter2&bogus=1", "hunter2"},
	{"user:hunter2@host:6379", "hunter2"},        // no scheme: url.Parse makes it opaque
	{"http://user:hunter2@host:6379", "hunter2"}, // wrong scheme
	{"redis://s1:26379/0?master_name=m&password=hunter2&addr=bad", "hunter2"},
	{"redis://user:hunter2@s1:26379/x?master_name=m", "hunter2"},
	{"redis://n1:7000?cluster=true&addr=u:hunter2@n2:7001", "hunter2"},
	{"redis://user:hunter2@n1:7000?cluster=true&dial_timeout=soon", "hunter2"},
}

func TestBadURLErrorsNeverShowThePassword(t *testing.T) {
	for _, c := range leakyURLs {
		t.Run(c.url, func(t *testing.T) {
			_, err := redisconn.Open(c.url, redisconn.TLSFiles{})
			require.ErrorIs(t, err, redisconn.ErrBadURL)
			require.NotContains(t, err.Error(), c.secret, "Open(%q) = %v", c.url, err)
			require.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestBadURLErrorsSayWhy(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"redis://user:hunter2@host:notaport", `bad Redis URL "redis://xxxxx@host:notaport": invalid port ":notaport" after host`},
		{"redis://user:hun/ter2@host:6379", `bad Redis URL "redis://xxxxx@host:6379": the user or password does not parse`},
		{"redis://user:hunter2@host:6379/x", `bad Redis URL "redis://user:xxxxx@host:6379/x": redis: invalid database number: "x"`},
	} {
		_, err := redisconn.Open(c.url, redisconn.TLSFiles{})
		require.ErrorContains(t, err, c.want)
	}
}

var describes = []struct {
	url, want string
}{
	{"redis://user:hunter2@host:6379/1", "redis://user:xxxxx@host:6379/1"},
	{"redis://:hunter2@host:6379", "redis://:xxxxx@host:6379"},
	{"redis://host:6379", "redis://host:6379"},
	{"redis://user@host:6379", "redis://user@host:6379"},
	{"redis://user:hunter2@host:notaport", "redis://xxxxx@host:notaport"},
	{"redis://user:hun/ter2@host:6379", "redis://xxxxx@host:6379"},
	{"redis://u:p#hunter2@h:1", "redis://xxxxx@h:1"},
	{"redis://u:hunter2@host:6379?addr=h2:1&addr=h3:%zz", "redis://u:xxxxx@host:6379?addr=h2:1&addr=h3:%zz"},
	{"user:hunter2@host:6379", "xxxxx@host:6379"},
	{"redis://s1:26379/0?master_name=m&password=hunter2", "redis://s1:26379/0?master_name=m&password=xxxxx"},
	{"redis://h:bad?Password=hunter2&x=1", "redis://h:bad?Password=xxxxx&x=1"},
	{"redis://n1:7000?cluster=true&addr=u:hunter2@n2:7001", "redis://n1:7000?cluster=true&addr=xxxxx"},
}

func TestDescribeNeverShowsThePassword(t *testing.T) {
	for _, c := range describes {
		got := redisconn.Describe(c.url)
		require.Equal(t, c.want, got, "Describe(%q)", c.url)
		require.False(t, strings.Contains(got, "hunter2"), "Describe(%q) = %q", c.url, got)
	}
}
