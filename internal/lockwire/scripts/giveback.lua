-- Undo what acquisition call ARGV[2] (owner ARGV[1]) did to KEYS[1], only where nothing changed
-- since: the holder record KEYS[2] still names the call and the lock still has the expiry the
-- call left. A lock the call took is deleted; a lock it re-entered gets back the expiry and the
-- record it had before, the record with its own expiry (and if that earlier state is the same
-- call's own, a resent request that re-entered what it had just taken, that is undone too).
-- Anything else, another owner, a later re-entry by the same owner, a change by a process that
-- writes no record, is left alone.
-- The call also leaves the lock's wait queue (its ticket is ARGV[2]). A deleted lock, or a free
-- lock whose queue head this call was, is announced on the wake-up channel (see lib.lua).
-- Returns 1 when the lock was deleted, 2 when it was put back, 0 when it was left alone.
local function undo()
  local result = 0
  while true do
    if redis.call('GET', KEYS[1]) ~= ARGV[1] then
      return result
    end
    local rec = readRecord()
    if not rec or rec.claim ~= ARGV[2] or not sameExpiry(rec.at) then
      return result
    end
    if not rec.prev then
      if rec.re then
        return result -- a re-entry whose earlier state was not kept: the owner keeps the lock
      end
      freeLock('DEL')
      return 1
    end
    local prev = cjson.decode(rec.prev)
    local at = tonumber(prev.at)
    if at < 0 then
      redis.call('PERSIST', KEYS[1])
    else
      redis.call('PEXPIREAT', KEYS[1], decimal(math.max(at, nowMs() + 1)))
    end
    if prev.rec then
      redis.call('SET', KEYS[2], prev.rec)
      expireRecordAt(tonumber(prev.recAt))
    else
      redis.call('DEL', KEYS[2])
    end
    result = 2
  end
end
local wasHead = queueHead() == ARGV[2]
leaveQueue(ARGV[2])
local result = undo()
if result ~= 1 and wasHead and redis.call('EXISTS', KEYS[1]) == 0 then
  announceFree()
end
return result
