-- Shared by every script below (prepended when they are loaded; docs/data-model.md has the
-- whole story). Every script runs on one lock and its side keys, all in the lock's Cluster slot:
-- KEYS[1] the lock (stock's key and value: the owner).
-- KEYS[2] its holder record, written by the acquisition that last took or re-entered the lock
--   (stock Medusa writes none): one string with the lock's expiry, of the fields RECORD_FIELDS
--   (defined in front of this file, internal/lockwire/record.go) joined by NUL bytes, the
--   owner after the last:
--   claim  the acquisition call that wrote it
--   at     the lock's expiry that call left (absolute ms; -1: none), so that a later change of
--          the lock by anyone, stock included, can be told
--   since  when the hold began, in server time (absolute ms; a re-entry keeps it, unless the
--          record did not describe the hold: see acquire.lua)
--   fence  the hold's fencing token: the server time in microseconds when the hold began
--   host, pid, prog, kind  the process that took it (host name, process id, program or service
--          name, client kind), sent by the caller as one argument already joined
--   re     1 when that call re-entered a lock its owner already held, else empty
--   prev   (re-entries only) JSON {at, rec, recAt}: the lock's expiry, its record's text and
--          the record's own expiry before the re-entry
--   lease  for a lease's hold (renewed, and told when an operator revokes it), its TTL in
--          seconds; empty for a plain acquisition
--   revoked  when an operator revoked the hold (absolute ms; see revoke.lua), else empty
-- KEYS[3] and KEYS[4] the fair queue (Options.FairQueue only, see provider/queue.go): a list
--   of tickets (the claims of waiting calls) in arrival order and a sorted set of ticket -> expiry
--   (absolute ms). A ticket that is not refreshed expires and is dropped when it reaches the
--   head; both keys expire with their last ticket.
-- KEYS[5] the share record (see provider/share.go): a hash that exists only while processes
--   that write no holder record (stock Medusa) contend for the lock, so that our clients, which
--   hand the lock on within a round trip, leave those processes their turns:
--   seen   when one of ours last found the lock held by such a process (absolute ms)
--   theirs when ours first saw the current run of such a process (absolute ms)
--   since  when our clients' current run on the lock began (absolute ms)
--   yield  until when our clients leave the freed lock to the others (absolute ms)
--   It expires SHARE_MEMORY ms after one of ours last found the lock held by such a process.
-- KEYS[6] the contention marker: it exists while a waiting call of ours may sleep between
--   attempts on the lock (set by those attempts, see markWaiting; provider/wakeup.go) and while
--   a share record lives. Only then does a script that frees the lock read the share record and the
--   queue and announce the free lock: the uncontended path touches nothing else.
-- The last ARGV of every script is the wake-up channel: a script that frees the lock publishes
-- "<queue head>\n<lock key>" on it (the head empty when nobody queues), when the marker exists.
-- No script fails after its first write: a side key of another type is read with redis.pcall
-- and taken as missing, and every read that can fail comes before the lock is written.

-- decimal writes the whole number n as a decimal string, exact below 2^53. An argument of
-- redis.call given as a number is written with "%.17g" (and string.format's "%.0f" is no
-- cheaper): for the 13 to 16 digits of a time that is several times the cost of "%d".
local function decimal(n)
  return string.format('%d', n)
end

-- expireAt returns key's expiry as an absolute Unix time in milliseconds, -1 when it has none,
-- -2 when the key does not exist. PEXPIRETIME (Redis 7) is exact; older servers add PTTL to
-- TIME, which may be off by a millisecond (comparisons allow for it).
local function expireAt(key)
  local at = redis.pcall('PEXPIRETIME', key)
  if type(at) == 'number' then
    return at
  end
  local pttl = redis.call('PTTL', key)
  if pttl < 0 then
    return pttl
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + pttl
end

-- sameAt tells whether two expiries are the same one: within 2 ms, the millisecond that servers
-- before Redis 7 may be off by on each side when expireAt adds PTTL to TIME. (Our scripts give a
-- lock and its record one absolute expiry, and write it as a record's "at".)
local function sameAt(a, b)
  return math.abs(a - b) <= 2
end

-- sameExpiry tells whether the lock still has the expiry a claim left (see "at").
local function sameExpiry(at)
  return at ~= nil and sameAt(expireAt(KEYS[1]), tonumber(at))
end

-- nowMs is the server's time in absolute milliseconds.
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- recordText is the holder record of a hold: claim, at, since and fence as decimal text, re and
-- prev ('' when not a re-entry), the taking process ARGV[7], lease (the TTL of a lease that holds
-- it, '' for a plain acquisition), not revoked, and the owner ARGV[1], in the order of
-- RECORD_FIELDS.
local function recordText(claim, at, since, fence, re, prev, lease)
  return claim .. '\0' .. at .. '\0' .. since .. '\0' .. fence .. '\0' .. ARGV[7] .. '\0' .. re .. '\0' .. prev ..
    '\0' .. lease .. '\0\0' .. ARGV[1]
end

-- readRecord returns the record as a table of its fields (empty ones left out, the owner as
-- "owner"), or nil when there is none or the key is not one (another type: a hash an older
-- version wrote, or anything else).
local function readRecord()
  local text = redis.pcall('GET', KEYS[2])
  if type(text) ~= 'string' then
    return nil
  end
  local rec, pos = {}, 1
  for i = 1, #RECORD_FIELDS do
    local stop = string.find(text, '\0', pos, true)
    if not stop then
      return nil
    end
    if stop > pos then
      rec[RECORD_FIELDS[i]] = string.sub(text, pos, stop - 1)
    end
    pos = stop + 1
  end
  rec.owner = string.sub(text, pos)
  return rec
end

-- joinRecord is the text of rec, a record as readRecord returns it.
local function joinRecord(rec)
  local parts = {}
  for i, name in ipairs(RECORD_FIELDS) do
    parts[i] = rec[name] or ''
  end
  parts[#parts + 1] = rec.owner
  return table.concat(parts, '\0')
end

-- expireRecordAt gives the record the expiry at (absolute ms; below 0: none).
local function expireRecordAt(at)
  if at >= 0 then
    redis.call('PEXPIREAT', KEYS[2], decimal(at))
  else
    redis.call('PERSIST', KEYS[2])
  end
end

-- queueHead drops dead tickets (expired or gone) from the front of the queue and returns the
-- live head, or nil when nobody queues (or the queue's keys are not a list and a sorted set).
local function queueHead()
  local now
  while true do
    local head = redis.pcall('LINDEX', KEYS[3], 0)
    if type(head) ~= 'string' then
      return nil
    end
    local exp = redis.pcall('ZSCORE', KEYS[4], head)
    if type(exp) == 'table' then
      return nil
    end
    if exp then
      now = now or nowMs()
      if tonumber(exp) >= now then
        return head
      end
    end
    redis.call('LPOP', KEYS[3])
    redis.call('ZREM', KEYS[4], head)
  end
end

-- joinQueue puts ticket at the back of the queue, or keeps its place if it is in it, and makes
-- it live for ttl more milliseconds; the queue lives as long as its longest-lived ticket.
local function joinQueue(ticket, ttl)
  if not redis.call('ZSCORE', KEYS[4], ticket) then
    redis.call('RPUSH', KEYS[3], ticket)
  end
  redis.call('ZADD', KEYS[4], nowMs() + ttl, ticket)
  local last = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', KEYS[3], last[2])
  redis.call('PEXPIREAT', KEYS[4], last[2])
end

-- leaveQueue takes ticket out of the queue (nothing when it is not in it).
local function leaveQueue(ticket)
  if redis.call('ZREM', KEYS[4], ticket) == 1 then
    redis.call('LREM', KEYS[3], 1, ticket)
  end
end

-- markWaiting marks that a waiting call of ours sleeps on the lock until its next attempt,
-- which it makes within ttl / 2 ms (or that a share record lives for ttl ms): the marker is
-- made to live ttl ms when it has less than half of that left, so it is never shortened
-- (another Provider's waiters may need longer) and is written at most once per ttl / 2 however
-- many waiters poll.
local function markWaiting(ttl)
  if redis.call('PTTL', KEYS[6]) < ttl / 2 then
    redis.call('SET', KEYS[6], '1', 'PX', ttl)
  end
end

-- Stock's turns (provider/share.go has the rule and docs/waiting.md the reasons): after our
-- clients have held the lock for SHARE_RUN ms in a row while a process that writes no holder
-- record contends, the release that frees it leaves it free for that process for SHARE_WINDOW
-- ms. SHARE_RUN, SHARE_WINDOW and SHARE_MEMORY are defined in front of this file
-- (internal/lockwire/scripts.go).

-- runOver tells, before a delete of ours frees the lock, whether our run on it has lasted
-- SHARE_RUN ms (the share record, when one lives, says since when).
local function runOver()
  local since = redis.pcall('HGET', KEYS[5], 'since')
  return type(since) == 'string' and nowMs() - tonumber(since) >= SHARE_RUN
end

-- freeLock deletes the lock and its record with del (DEL or UNLINK). When the contention
-- marker exists (marked, when the caller read it already, else read here) it also ends our run
-- (leaving the lock to others for SHARE_WINDOW ms when runOver) and tells the waiters that the
-- lock is free: the queue head, if any, is the one to take it (see provider/listen.go). Its
-- reads come before the delete.
local function freeLock(del, marked)
  if marked == nil then
    marked = redis.call('EXISTS', KEYS[6]) == 1
  end
  if not marked then
    redis.call(del, KEYS[1], KEYS[2])
    return
  end
  local over = runOver()
  local head = queueHead()
  redis.call(del, KEYS[1], KEYS[2])
  if over then
    redis.call('HDEL', KEYS[5], 'since')
    redis.call('HSET', KEYS[5], 'yield', nowMs() + SHARE_WINDOW)
  end
  redis.call('PUBLISH', ARGV[#ARGV], (head or '') .. '\n' .. KEYS[1])
end

-- announceFree tells the waiters that the free lock is the queue head's now (freeLock's
-- announcement, for a lock that another script freed).
local function announceFree()
  if redis.call('EXISTS', KEYS[6]) == 1 then
    redis.call('PUBLISH', ARGV[#ARGV], (queueHead() or '') .. '\n' .. KEYS[1])
  end
end

-- ourHold tells whether the lock, held by owner, is held by one of ours: its record names the
-- owner and, for an owner that is not an execute call's (those are unique per call, so a record
-- of theirs is always the hold's), has the lock's expiry. A record of a shared owner ("*", a
-- named owner) with another expiry was left by an earlier hold of ours that a process that
-- writes no record released before taking the lock again (docs/fencing.md). It returns the
-- record too when the hold is ours.
local function ourHold(owner)
  local rec = readRecord()
  if not rec or rec.owner ~= owner then
    return false
  end
  if string.sub(owner, 1, 8) == 'execute:' or sameAt(expireAt(KEYS[2]), expireAt(KEYS[1])) then
    return true, rec
  end
  return false
end

-- noteForeign remembers that the lock, held by owner (nil: not held), is held by a process that
-- writes no holder record (or a record that does not describe the hold: see ourHold), and ends
-- our run; the contention marker then lives as long as the share record. It returns true when
-- that process's run, as far as ours have seen it, has lasted SHARE_RUN ms: its turn is over,
-- and our waiters may try harder to find the lock free between its release and its re-take.
local function noteForeign(owner)
  if owner and not ourHold(owner) then
    local now = nowMs()
    redis.call('HDEL', KEYS[5], 'since', 'yield')
    redis.call('HSET', KEYS[5], 'seen', now)
    redis.call('HSETNX', KEYS[5], 'theirs', now)
    redis.call('PEXPIRE', KEYS[5], SHARE_MEMORY)
    markWaiting(SHARE_MEMORY)
    return now - tonumber(redis.call('HGET', KEYS[5], 'theirs')) >= SHARE_RUN
  end
  return false
end

-- shareState reads the share record in one command: whether it exists ("seen" is set whenever
-- it does) and its "yield" (false when not set). A key of another type counts as none.
local function shareState()
  local v = redis.pcall('HMGET', KEYS[5], 'yield', 'seen')
  if v.err then
    return false, false
  end
  return v[2] ~= false, v[1]
end

-- yieldLeft is how many ms the free lock is still left to the others (0: none), given the
-- share record's "yield" (see shareState).
local function yieldLeft(y)
  if not y then
    return 0
  end
  return math.max(tonumber(y) - nowMs(), 0)
end

-- startRun notes, when others contend (shared: the share record exists, see shareState), that
-- a run of ours on the lock begins at now (absolute ms).
local function startRun(shared, now)
  if shared and redis.call('HSETNX', KEYS[5], 'since', now) == 1 then
    redis.call('HDEL', KEYS[5], 'yield', 'theirs')
  end
end
