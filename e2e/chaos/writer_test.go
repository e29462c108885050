package chaos_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/e2e/chaos"
)

func TestLogWritesWhatReadLogsReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "go-1.jsonl")
	l, err := chaos.OpenLog(path)
	require.NoError(t, err)
	at, err := l.Now("go-1", "k", chaos.Enter, chaos.Field{Name: "owner", Value: "execute:1"})
	require.NoError(t, err)
	require.NoError(t, l.Append(chaos.Event{T: 9007199254740993, Holder: "go-1", Key: "k", Ev: chaos.Exit}))
	require.NoError(t, l.Append(chaos.Event{T: 9007199254740994, Holder: "go-1", Ev: chaos.Killed}))
	require.NoError(t, l.Close())

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"ev":"enter","owner":"execute:1"}`+"\n")
	events, err := chaos.ReadLogs(path)
	require.NoError(t, err)
	require.Equal(t, []chaos.Event{
		{T: at, Holder: "go-1", Key: "k", Ev: chaos.Enter, File: path, Line: 1},
		{T: 9007199254740993, Holder: "go-1", Key: "k", Ev: chaos.Exit, File: path, Line: 2},
		{T: 9007199254740994, Holder: "go-1", Ev: chaos.Killed, File: path, Line: 3},
	}, events)
}

func TestLogRefusesWhatReadLogsWouldNot(t *testing.T) {
	l, err := chaos.OpenLog(filepath.Join(t.TempDir(), "log.jsonl"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	for _, tt := range []struct {
		name   string
		e      chaos.Event
		fields []chaos.Field
	}{
		{"no holder", chaos.Event{T: 1, Key: "k", Ev: chaos.Enter}, nil},
		{"enter without key", chaos.Event{T: 1, Holder: "h", Ev: chaos.Enter}, nil},
		{"killed with key", chaos.Event{T: 1, Holder: "h", Key: "k", Ev: chaos.Killed}, nil},
		{"shadowing field", chaos.Event{T: 1, Holder: "h", Key: "k", Ev: chaos.Exit}, []chaos.Field{{Name: "ev", Value: "enter"}}},
		{"unencodable field", chaos.Event{T: 1, Holder: "h", Key: "k", Ev: chaos.Exit}, []chaos.Field{{Name: "c", Value: make(chan int)}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Error(t, l.Append(tt.e, tt.fields...))
		})
	}
}

// Concurrent writers (goroutines here, processes in a run) never interleave within a line.
func TestLogLinesStayWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.jsonl")
	const writers, lines = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		l, err := chaos.OpenLog(path)
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		wg.Go(func() {
			for range lines {
				_, err := l.Now("h-"+string(rune('a'+w)), "key", chaos.Exit)
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	events, err := chaos.ReadLogs(path)
	require.NoError(t, err)
	require.Len(t, events, writers*lines)
}
