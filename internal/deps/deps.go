//go:build tools

// Package deps pins the project's chosen dependencies in go.mod while the packages that use
// them are being written; it is never built.
package deps

import (
	_ "charm.land/bubbles/v2/table"
	_ "charm.land/bubbletea/v2"
	_ "charm.land/lipgloss/v2"
	_ "github.com/alicebob/miniredis/v2"
	_ "github.com/gorilla/websocket"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/stretchr/testify/require"
	_ "go.uber.org/goleak"
)
