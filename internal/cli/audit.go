package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/audit"
	"github.com/locktui/locktui/redisconn"
)

// OpenAudit opens the audit trail cfg names (audit.Open): the file cfg.AuditLog
// (audit.DefaultPath() when empty) and, when cfg.AuditStream is set, that Redis stream on
// client. closeFn closes the file; the caller keeps ownership of client. The console and the
// commands that release locks (release, release-all) both open their trail here, so they write
// to the same places.
func (cfg ConsoleConfig) OpenAudit(client redis.UniversalClient) (sink *audit.Trail, closeFn func(), err error) {
	trail, err := audit.Open(audit.Options{Path: cfg.AuditLog, Stream: cfg.AuditStream, Client: client})
	switch {
	case errors.Is(err, audit.ErrNoPath):
		return nil, nil, fmt.Errorf("no audit log path (give one with --audit-log): %w", err)
	case err != nil:
		return nil, nil, fmt.Errorf("open the audit log (choose another with --audit-log): %w", err)
	}
	return trail, func() { _ = trail.Close() }, nil
}

// trail is where release and release-all record what they did: the releaser they release
// through (audit.Releaser, the console's path too), its file and its connection.
type trail struct {
	*audit.Releaser
	closeFn func()
	warnf   func(format string, args ...any)
}

// openTrail connects as the flags of o say and opens the audit trail they name, with the
// stream on that connection. It is opened before anything is released: a trail that cannot be
// opened stops the command. Close closes both.
func (s *session) openTrail(ctx context.Context, o *options) (*trail, error) {
	c, err := s.connect(ctx, o)
	if err != nil {
		return nil, err
	}
	sink, closeFn, err := o.consoleConfig().OpenAudit(c.client)
	if err != nil {
		c.Close()
		return nil, err
	}
	r := &audit.Releaser{Inspector: c.ops, Sink: sink, Operator: audit.Operator(), Namespace: o.namespace,
		Server: redisconn.Describe(o.url), Scan: s.pacedScan(s.limiter(), nil)}
	return &trail{Releaser: r, closeFn: func() { closeFn(); c.Close() }, warnf: s.warnf}, nil
}

// Close closes the audit file, then the connection.
func (t *trail) Close() { t.closeFn() }

// warnAudit says that the record of a release could not be written. The release has happened,
// so a failed write does not change the exit code: it is one warning line on stderr, and the
// sinks that work still got the record.
func (t *trail) warnAudit(action, key string, r audit.Released) {
	if r.AuditErr == nil {
		return
	}
	subject := strconv.Quote(key)
	if key == "" {
		subject = "owner " + strconv.Quote(r.Owner)
	}
	t.warnf("could not audit %s of %s (%s): %s", action, subject, r.Result(), oneLine(r.AuditErr.Error()))
}
