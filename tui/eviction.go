package tui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/redisconn"
)

// evictionReadTimeout bounds the console's one read of the server's maxmemory-policy.
const evictionReadTimeout = 2 * time.Second

// evictionMsg is the server's maxmemory-policy when it can evict held locks.
type evictionMsg struct{ policy string }

// readEviction reads the maxmemory-policy once, at start: a policy that can evict held locks
// gets a badge (see tabs), one that cannot be read (INFO refused) nothing.
func (m *model) readEviction() tea.Cmd {
	return m.rt.cmd(func(ctx context.Context) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, evictionReadTimeout)
		defer cancel()
		policy, err := redisconn.EvictionPolicy(ctx, m.cfg.Client)
		if err != nil || redisconn.EvictionWarning(policy) == "" {
			return nil
		}
		return evictionMsg{policy: policy}
	})
}
