// Command protocoljson writes bridge.ProtocolJSON to bridge.ProtocolJSONFile under the module
// root, for the Node client: `go generate ./bridge` runs it. A test of package bridge fails when
// the file is stale.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/locktui/locktui/bridge"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "protocoljson:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	path := filepath.Join(root, filepath.FromSlash(bridge.ProtocolJSONFile))
	data := bridge.ProtocolJSON()
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil // up to date: leave its modification time alone
	}
	return os.WriteFile(path, data, 0o644)
}

// moduleRoot is the nearest directory at or above the working directory with a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod at or above the working directory")
		}
		dir = parent
	}
}
