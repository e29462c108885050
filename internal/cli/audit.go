package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/audit"
	"github.com/locktui/locktui/redisconn"
)

// auditTimeout bounds each audit write. The deadline is the write's own, detached from the
// command's context: a command interrupted right after a release still leaves its record.
const auditTimeout = 5 * time.Second

// OpenAudit opens the audit trail cfg names: the file cfg.AuditLog (audit.DefaultPath() when
// empty) and, when cfg.AuditStream is set, that Redis stream on client. closeFn closes the file;
// the caller keeps ownership of client. The console and the commands that release locks
// (release, release-all) both open their trail here, so they write to the same places.
func (cfg ConsoleConfig) OpenAudit(client redis.UniversalClient) (sink audit.Sink, closeFn func(), err error) {
	path := cfg.AuditLog
	if path == "" {
		p, err := audit.DefaultPath()
		if err != nil {
			return nil, nil, fmt.Errorf("no audit log path (give one with --audit-log): %w", err)
		}
		path = p
	}
	file, err := audit.NewFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open the audit log (choose another with --audit-log): %w", err)
	}
	sinks := []audit.Sink{file}
	if cfg.AuditStream != "" {
		sinks = append(sinks, audit.NewStream(client, cfg.AuditStream, 0))
	}
	return audit.Multi(sinks...), func() { _ = file.Close() }, nil
}

// trail is where release and release-all record what they did.
type trail struct {
	sink    audit.Sink
	closeFn func()
	base    audit.Record // operator, namespace and server of every record
	warnf   func(format string, args ...any)
}

// openTrail opens the audit trail the flags of o name, with the stream on c's client. It is
// opened before anything is released: a trail that cannot be opened stops the command.
func (s *session) openTrail(o *options, c *conn) (*trail, error) {
	sink, closeFn, err := o.consoleConfig().OpenAudit(c.client)
	if err != nil {
		return nil, err
	}
	base := audit.Record{Operator: audit.Operator(), Namespace: o.namespace, Server: redisconn.Describe(o.url)}
	return &trail{sink: sink, closeFn: closeFn, base: base, warnf: s.warnf}, nil
}

// Close closes the audit file.
func (t *trail) Close() { t.closeFn() }

// write records one action. The action it records has happened, so a failed write does not
// change the exit code: it is one warning line on stderr, and the sinks that work still get
// the record.
func (t *trail) write(ctx context.Context, r audit.Record) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	r.Time = time.Now()
	r.Operator, r.Namespace, r.Server = t.base.Operator, t.base.Namespace, t.base.Server
	if err := t.sink.Write(ctx, r); err != nil {
		subject := strconv.Quote(r.Key)
		if r.Key == "" {
			subject = "owner " + strconv.Quote(r.Owner)
		}
		t.warnf("could not audit %s of %s (%s): %s", r.Action, subject, r.Result, oneLine(err.Error()))
	}
}

// auditResult is the Result of an action that released count keys, or failed with err.
func auditResult(count int, err error) string {
	switch {
	case err != nil:
		return audit.ResultError(err)
	case count == 0:
		return audit.ResultNotHeld
	default:
		return audit.ResultReleased
	}
}
