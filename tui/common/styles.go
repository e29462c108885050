package common

import (
	"charm.land/lipgloss/v2"

	"github.com/locktui/locktui/tui/store"
)

// Styles is every style of the console. With NoColor no style sets a colour: emphasis is bold,
// faint and reverse video only, and every state is a word anyway.
type Styles struct {
	NoColor bool

	Title, Tab, ActiveTab, Badge lipgloss.Style

	Status, StatusKey, Stale lipgloss.Style

	Header, Row, Selected, Dim lipgloss.Style
	States                     map[store.State]lipgloss.Style

	Dialog, DialogTitle lipgloss.Style

	HelpKey, HelpDesc, HelpSection lipgloss.Style

	Error, OK, Info, Spark lipgloss.Style
}

// NewStyles returns the styles for a dark or light background.
func NewStyles(isDark, noColor bool) *Styles {
	ld := lipgloss.LightDark(isDark)
	fg := func(light, dark string) func(lipgloss.Style) lipgloss.Style {
		return func(st lipgloss.Style) lipgloss.Style {
			if noColor {
				return st
			}
			return st.Foreground(ld(lipgloss.Color(light), lipgloss.Color(dark)))
		}
	}
	var (
		accent = fg("#5A2FC2", "#B69CFF")
		red    = fg("#B00020", "#FF6B6B")
		amber  = fg("#8A5A00", "#FFC857")
		green  = fg("#0B6E2E", "#7BD88F")
		blue   = fg("#0B4F9C", "#79B8FF")
		muted  = fg("#6B6B6B", "#8C8C8C")
	)
	s := &Styles{NoColor: noColor}
	base := lipgloss.NewStyle()
	s.Title = accent(base.Bold(true))
	s.Tab = muted(base)
	s.ActiveTab = accent(base.Bold(true).Underline(true))
	s.Badge = base.Bold(true).Reverse(true)
	s.Status = base
	s.StatusKey = muted(base)
	s.Stale = base.Bold(true).Reverse(true)
	if !noColor {
		s.Stale = red(base.Bold(true))
	}
	s.Header = base.Bold(true)
	s.Row = base
	s.Selected = base.Reverse(true)
	s.Dim = muted(base.Faint(noColor))
	s.States = map[store.State]lipgloss.Style{
		store.StateHeld:     base,
		store.StateExpiring: amber(base.Bold(true)),
		store.StateNoTTL:    red(base.Bold(true)),
		store.StateRenewed:  green(base),
		store.StateGone:     muted(base.Faint(true)),
		store.StateForeign:  muted(base),
	}
	s.Dialog = base.Border(lipgloss.RoundedBorder()).Padding(0, 1)
	if !noColor {
		s.Dialog = s.Dialog.BorderForeground(ld(lipgloss.Color("#5A2FC2"), lipgloss.Color("#B69CFF")))
	}
	s.DialogTitle = accent(base.Bold(true))
	s.HelpKey = accent(base.Bold(true))
	s.HelpDesc = base
	s.HelpSection = base.Bold(true).Underline(true)
	s.Error = red(base.Bold(true))
	s.OK = green(base)
	s.Info = blue(base)
	s.Spark = blue(base)
	return s
}

// State returns the style of a lock state.
func (s *Styles) State(st store.State) lipgloss.Style { return s.States[st] }
