package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrNoPath is returned by Open when no path was given and DefaultPath has none (no home
// directory).
var ErrNoPath = errors.New("audit: no audit log path")

// Options say where Open sends the records.
type Options struct {
	// Path is the JSON-lines file to append to; "" means DefaultPath().
	Path string
	// Stream is a Redis stream to add every record to as well; "" for none.
	Stream string
	// Client is the Redis client of Stream (required with Stream); the caller keeps ownership.
	Client redis.UniversalClient
}

// Trail is an opened audit trail: the file and, when asked for, the stream. It is a Sink.
type Trail struct {
	file  *File
	sinks Sink
}

// Open opens the trail opts name. Every tool that changes locks (the console's d and D, the
// CLI's release and release-all) opens its trail here, so they write to the same places.
func Open(opts Options) (*Trail, error) {
	path := opts.Path
	if path == "" {
		p, err := DefaultPath()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoPath, err)
		}
		path = p
	}
	file, err := NewFile(path)
	if err != nil {
		return nil, err
	}
	sinks := []Sink{file}
	if opts.Stream != "" {
		if opts.Client == nil {
			_ = file.Close()
			return nil, errors.New("audit: a stream needs a Redis client")
		}
		sinks = append(sinks, NewStream(opts.Client, opts.Stream, 0))
	}
	return &Trail{file: file, sinks: Multi(sinks...)}, nil
}

// Write stores r in every place of the trail (see Multi).
func (t *Trail) Write(ctx context.Context, r Record) error { return t.sinks.Write(ctx, r) }

// Where names the places of the trail, for the operator: "/var/log/locktui.jsonl and Redis
// stream locktui:audit".
func (t *Trail) Where() string { return Where(t.sinks) }

// Close closes the file; later writes fail.
func (t *Trail) Close() error { return t.file.Close() }

// Where names where s stores records: a file's path, "Redis stream NAME", the places of a
// Multi joined with "and"; "" for a Sink that does not say.
func Where(s Sink) string {
	switch s := s.(type) {
	case nil:
		return ""
	case *File:
		return s.Path()
	case *Stream:
		return "Redis stream " + s.Name()
	case multi:
		var parts []string
		for _, sink := range s {
			if w := Where(sink); w != "" {
				parts = append(parts, w)
			}
		}
		return strings.Join(parts, " and ")
	case interface{ Where() string }:
		return s.Where()
	}
	return ""
}
