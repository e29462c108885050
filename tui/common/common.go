// Package common holds what every part of the console shares: the size of the screen, the
// styles, the key map and the clock, plus the Component contract and value formatting.
package common

import (
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"
)

// Common is shared by the root model, the pages and the components (by pointer), like
// soft-serve's common.Common.
type Common struct {
	Width, Height int
	Styles        *Styles
	Keys          *KeyMap
	// ReadOnly hides and disables every mutation.
	ReadOnly bool
	// Now is the clock the countdowns use; tests fix it.
	Now func() time.Time
}

// New returns a Common with default styles (dark background) and keys.
func New(readOnly, noColor bool) *Common {
	return &Common{
		Styles:   NewStyles(true, noColor),
		Keys:     DefaultKeyMap(readOnly),
		ReadOnly: readOnly,
		Now:      time.Now,
	}
}

// SetSize records the screen size.
func (c *Common) SetSize(width, height int) { c.Width, c.Height = width, height }

// Component is one part of the screen: it handles messages, renders a string for the size it
// was given and lists its keys for the help.
type Component interface {
	help.KeyMap
	Update(msg tea.Msg) tea.Cmd
	View() string
	SetSize(width, height int)
}
