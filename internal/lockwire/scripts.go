package lockwire

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/lib.lua
	libSrc string
	//go:embed scripts/acquire.lua
	acquireSrc string
	//go:embed scripts/extend.lua
	extendSrc string
	//go:embed scripts/release.lua
	releaseSrc string
	//go:embed scripts/giveback.lua
	givebackSrc string
	//go:embed scripts/claimed.lua
	claimedSrc string
	//go:embed scripts/revoke.lua
	revokeSrc string
)

// The scripts, each with the part of lib.lua it needs in front (docs/data-model.md says what
// each reads and writes). Provider runs all but Revoke, which is the operator's force-release
// and also frees the keys of provider's ReleaseAll.
var (
	Acquire  = newScript(acquireSrc)
	Extend   = newScript(extendSrc)
	Release  = newScript(releaseSrc)
	Giveback = newScript(givebackSrc)
	Claimed  = newScript(claimedSrc)
	Revoke   = newScript(revokeSrc)
)

// Arguments of revoke.lua after the owner: the hold it may free, and the mode.
const (
	// AnyHold is the pin of whichever hold the owner has: releaseAll deletes by owner, as stock
	// does. Any other pin names one hold (operator.ForceReleaseHold).
	AnyHold = ""
	// RevokeTell tells a live lease's holder first and frees any other hold at once.
	RevokeTell = "tell"
	// RevokeNow deletes the key at once, whatever holds it.
	RevokeNow = "now"
)

// Stock's turns (provider/share.go has the rule): how long a run of our clients on a lock that
// processes writing no holder record contend for lasts, how long the lock is then left to them,
// and how long the share record lives. The scripts get them as SHARE_RUN, SHARE_WINDOW and
// SHARE_MEMORY, in milliseconds.
const (
	ShareRun    = 250 * time.Millisecond
	ShareWindow = 150 * time.Millisecond
	ShareMemory = 5 * time.Second
)

// shareConstants defines the constants above for the scripts, in front of lib.lua.
var shareConstants = fmt.Sprintf("local SHARE_RUN, SHARE_WINDOW, SHARE_MEMORY = %d, %d, %d\n",
	ShareRun.Milliseconds(), ShareWindow.Milliseconds(), ShareMemory.Milliseconds())

// Script is one Lua script of scripts/, with lib.lua in front. Every script runs on one lock
// key, its holder record, its fair queue and the queue's tickets, its share record and its
// contention marker (KEYS[1] to KEYS[6], all in the lock's slot), so it is atomic and slot-safe
// on a Cluster (docs/data-model.md). Its last argument is the wake-up channel (FreeChannel), on
// which the scripts that free a lock announce it while someone contends.
type Script struct {
	src string
	sha string
}

// scriptPrelude defines, in front of lib.lua, the constants the scripts share with Go.
var scriptPrelude = shareConstants + recordConstants

func newScript(body string) *Script {
	src := scriptPrelude + libFor(body) + body
	sum := sha1.Sum([]byte(src))
	return &Script{src: src, sha: hex.EncodeToString(sum[:])}
}

// SHA is the SHA1 (hex) of the script's text, as EVALSHA sends it.
func (s *Script) SHA() string { return s.sha }

// libFunc finds the functions a block of lib.lua defines.
var libFunc = regexp.MustCompile(`(?m)^local function (\w+)\(`)

// libFor is lib.lua with only the blocks (separated by blank lines) that define a function body
// calls, directly or through other functions, and the blocks that define none (comments), in
// lib.lua's order. A script runs its whole text on every call, so each function defined costs
// Redis a closure per call: release.lua needs 4 of lib.lua's 20 (about 1 µs of Redis CPU less
// per execute, measured).
func libFor(body string) string {
	blocks := strings.Split(libSrc, "\n\n")
	defines := make([][]string, len(blocks))
	for i, b := range blocks {
		for _, m := range libFunc.FindAllStringSubmatch(b, -1) {
			defines[i] = append(defines[i], m[1])
		}
	}
	need := make([]bool, len(blocks))
	var visit func(text string)
	visit = func(text string) {
		for i, names := range defines {
			if need[i] || !slices.ContainsFunc(names, func(name string) bool {
				return regexp.MustCompile(`\b` + name + `\(`).MatchString(text)
			}) {
				continue
			}
			need[i] = true
			visit(blocks[i])
		}
	}
	visit(body)
	var kept []string
	for i, b := range blocks {
		if len(defines[i]) == 0 || need[i] {
			kept = append(kept, b)
		}
	}
	return strings.Join(kept, "\n\n") + "\n"
}

// Cmd is one run of s on lock key rk with args and then channel (the wake-up channel, the last
// argument of every script): EVALSHA, or EVAL with the whole text when full. Its arguments are
// built in one slice of their final size: this runs twice per execute.
func (s *Script) Cmd(ctx context.Context, rk string, full bool, args []any, channel string) *redis.Cmd {
	name, body := "evalsha", s.sha
	if full {
		name, body = "eval", s.src
	}
	q, t := QueueKeys(rk)
	all := make([]any, 0, 9+len(args)+1)
	all = append(all, name, body, 6, rk, RecordKey(rk), q, t, ShareKey(rk), WaitersKey(rk))
	all = append(all, args...)
	return redis.NewCmd(ctx, append(all, channel)...)
}
