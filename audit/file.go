package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// File appends records to a local file, one JSON object per line (JSONL). Each record is
// written with a single write on a file opened with O_APPEND and synced to disk before Write
// returns, so records never interleave, even between processes sharing the file.
type File struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

// NewFile opens path for appending, creating it (mode 0600) and its directory (0700) if needed.
func NewFile(path string) (*File, error) {
	if path == "" {
		return nil, errors.New("audit: no audit file path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: create the directory of %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	return &File{path: path, f: f}, nil
}

// DefaultPath returns where the console keeps its audit file when none is given:
// $XDG_STATE_HOME/locktui/audit.jsonl, else ~/.local/state/locktui/audit.jsonl.
func DefaultPath() (string, error) {
	if dir := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "locktui", "audit.jsonl"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("audit: no home directory for the audit file: %w", err)
	}
	return filepath.Join(home, ".local", "state", "locktui", "audit.jsonl"), nil
}

// Path returns the file's path.
func (f *File) Path() string { return f.path }

// Write appends r as one line and syncs the file. ctx is not consulted: a local write is not
// abandoned half-way.
func (f *File) Write(_ context.Context, r Record) error {
	line, err := json.Marshal(complete(r))
	if err != nil {
		return fmt.Errorf("audit: encode record: %w", err)
	}
	line = append(line, '\n')
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.f.Write(line); err != nil {
		return fmt.Errorf("audit: write %s: %w", f.path, err)
	}
	if err := f.f.Sync(); err != nil {
		return fmt.Errorf("audit: sync %s: %w", f.path, err)
	}
	return nil
}

// Close closes the file; later writes fail.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("audit: close %s: %w", f.path, err)
	}
	return nil
}
