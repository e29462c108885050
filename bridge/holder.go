package bridge

import (
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/locktui/locktui/provider"
)

// ClientHeader is the upgrade request header in which a client names its process for the
// holder records of the locks it takes: host, pid and program, as a URL query string
// ("host=web-1&pid=4242&program=medusa-worker", each value URL-encoded; see
// docs/bridge-protocol.md). It is optional: without it a record names the client's address as
// host, with pid 0 and no program.
const ClientHeader = "Locktui-Client"

// clientHolder reads the Holder of the client that sent r (see ClientHeader).
func clientHolder(r *http.Request) provider.Holder {
	h := provider.Holder{Client: provider.ClientBridge}
	if q, err := url.ParseQuery(r.Header.Get(ClientHeader)); err == nil {
		h.Host, h.Program = q.Get("host"), q.Get("program")
		if pid, err := strconv.Atoi(q.Get("pid")); err == nil && pid > 0 {
			h.PID = pid
		}
	}
	if h.Host == "" {
		h.Host = r.RemoteAddr
		if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
			h.Host = host
		}
	}
	return h
}
