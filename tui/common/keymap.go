package common

import "charm.land/bubbles/v2/key"

// KeyMap is every key of the console (k9s-like). Disabled bindings neither match nor show in
// the help: in read-only mode Release and ReleaseAll are disabled.
type KeyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding

	NextView, PrevView, Views, Enter, Back key.Binding

	Filter, Command, Sort, SortReverse, Group, Sample, Refresh, CopyKey, CopyOwner key.Binding

	Release, ReleaseAll key.Binding

	Help, Quit key.Binding
}

// DefaultKeyMap returns the console's keys; readOnly disables the mutations.
func DefaultKeyMap(readOnly bool) *KeyMap {
	km := &KeyMap{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+f", "space"), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g", "top")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G", "bottom")),

		NextView: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next view")),
		PrevView: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("S-tab", "prev view")),
		Views:    key.NewBinding(key.WithKeys("1", "2", "3", "4"), key.WithHelp("1-4", "pick view")),
		Enter:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "detail")),
		Back:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back/unfilter")),

		Filter:      key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Sort:        key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort column")),
		SortReverse: key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "reverse sort")),
		Group:       key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "owner/process")),
		Command:     key.NewBinding(key.WithKeys(":"), key.WithHelp(":", "view by name")),
		Sample:      key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "sample (paid)")),
		Refresh:     key.NewBinding(key.WithKeys("r", "ctrl+r"), key.WithHelp("r", "refresh now")),
		CopyKey:     key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "copy key")),
		CopyOwner:   key.NewBinding(key.WithKeys("C"), key.WithHelp("C", "copy owner")),

		Release:    key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "force-release")),
		ReleaseAll: key.NewBinding(key.WithKeys("D"), key.WithHelp("D", "release owner")),

		Help: key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit: key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
	if readOnly {
		km.Release.SetEnabled(false)
		km.ReleaseAll.SetEnabled(false)
	}
	return km
}

// ShortHelp is the one-line help of the footer.
func (k *KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Help, k.Quit, k.Filter, k.Enter, k.Release, k.Sort}
}

// FullHelp is the help screen, in columns.
func (k *KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
		{k.NextView, k.PrevView, k.Views, k.Command, k.Enter, k.Back},
		{k.Filter, k.Sort, k.SortReverse, k.Refresh, k.CopyKey, k.CopyOwner},
		{k.Release, k.ReleaseAll, k.Group, k.Sample, k.Help, k.Quit},
	}
}
