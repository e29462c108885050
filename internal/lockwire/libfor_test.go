package lockwire

import (
	"strings"
	"testing"
)

// Each script gets the lib.lua functions it calls, those they call in turn, and no other: a
// function left out would fail the script with a Lua error when called.
func TestLibForKeepsWhatTheScriptCalls(t *testing.T) {
	lib := libFor("announceFree()\nreturn 1\n")
	for _, name := range []string{"announceFree", "queueHead", "nowMs"} { // queueHead calls nowMs
		if !strings.Contains(lib, "local function "+name+"(") {
			t.Errorf("libFor dropped %s, which the script needs", name)
		}
	}
	for _, name := range []string{"writeRecord", "nextFence", "joinQueue", "noteForeign"} {
		if strings.Contains(lib, "local function "+name+"(") {
			t.Errorf("libFor kept %s, which the script does not call", name)
		}
	}
	if whole := libFor(acquireSrc + givebackSrc + extendSrc + releaseSrc + revokeSrc + claimedSrc); !strings.Contains(whole, "local function sameExpiry(") {
		t.Error("libFor dropped sameExpiry, which giveback.lua needs")
	}
}
