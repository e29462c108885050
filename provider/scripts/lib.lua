-- Shared by every script below (prepended when they are loaded).
-- KEYS[1] is a lock key; KEYS[2] is its holder record: a hash beside the lock, outside the
-- namespace and in the lock's Cluster slot, written by the acquisition that last took or
-- re-entered the lock (stock Medusa writes none):
--   owner  the lock's owner
--   claim  the acquisition call that wrote it
--   at     the lock's expiry that call left (absolute ms; -1: none), so that a later change of
--          the lock by anyone, stock included, can be told
--   re     1 when that call re-entered a lock its owner already held
--   prev   (re-entries only) JSON {at, rec, recAt}: the lock's expiry, its record and the record's
--          own expiry before the re-entry
--   host, pid, prog, kind  the process that took it: host name, process id, program or service
--          name, client kind (go, bridge, cli)
--   since  when the hold began, in server time (absolute ms; a re-entry keeps it, unless the
--          record did not describe the hold: see acquire.lua)
--   fence  the hold's fencing token (a re-entry keeps it, as since)
-- KEYS[3] is the lock's wait queue and KEYS[4] its tickets, in the same slot (see queue.go):
-- the queue is a list of tickets (the claims of waiting acquisitions) in arrival order, the
-- tickets a sorted set of ticket -> expiry (absolute ms). A ticket that is not refreshed expires
-- and is dropped when it reaches the head; both keys expire with their last ticket.
-- KEYS[5] is the lock's share record (see share.go): a hash that exists only while processes
-- that write no holder record (stock Medusa) contend for the lock, so that our clients, which
-- hand the lock on within a round trip, leave those processes their turns:
--   seen   when one of ours last found the lock held by such a process (absolute ms)
--   theirs when ours first saw the current run of such a process (absolute ms)
--   since  when our clients' current run on the lock began (absolute ms)
--   yield  until when our clients leave the freed lock to the others (absolute ms)
-- It expires SHARE_MEMORY ms after one of ours last found the lock held by such a process.
-- KEYS[6] is the lock's fence: the last fencing token issued on the lock, kept FENCE_MEMORY ms
-- after that (it outlives the lock, so that tokens keep increasing across holds; fence.go).
-- KEYS[7] is the lock's waiter marker: it exists while a waiting call of ours may be sleeping
-- between attempts on the lock (set by those attempts, see markWaiting; wakeup.go).
-- The last ARGV of every script is the wake-up channel: a script that frees the lock publishes
-- "<queue head>\n<lock key>" on it (the head empty when nobody queues), when a waiter is marked.

-- decimal writes the whole number n as a decimal string, exact below 2^53. An argument of
-- redis.call given as a number is written with "%.17g" (and string.format's "%.0f" is no
-- cheaper): for the 13 to 16 digits of a time that is several times the cost of "%d".
local function decimal(n)
  return string.format('%d', n)
end

-- expireAt returns KEYS[1]'s expiry as an absolute Unix time in milliseconds, -1 when it has
-- none, -2 when the key does not exist. PEXPIRETIME (Redis 7) is exact; older servers add PTTL
-- to TIME, which may be off by a millisecond (comparisons allow for it).
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

-- sameAt tells whether two expiries read with expireAt are the same one: within 2 ms, the
-- millisecond that servers before Redis 7 may be off by on each side.
local function sameAt(a, b)
  return math.abs(a - b) <= 2
end

-- sameExpiry tells whether the lock still has the expiry a claim left (see "at").
local function sameExpiry(at)
  return at ~= nil and sameAt(expireAt(KEYS[1]), tonumber(at))
end

-- followLock gives the record the lock's lifetime: it expires when the lock does. at, when
-- given, is the lock's expiry as expireAt returns it (read by the caller already), and atText,
-- when given, at as decimal writes it (made by the caller already).
local function followLock(at, atText)
  at = at or expireAt(KEYS[1])
  if at >= 0 then
    redis.call('PEXPIREAT', KEYS[2], atText or decimal(at))
  else
    redis.call('PERSIST', KEYS[2])
  end
end

-- readRecord returns the record as a table of its fields, or nil.
local function readRecord()
  local flat = redis.call('HGETALL', KEYS[2])
  if #flat == 0 then
    return nil
  end
  local rec = {}
  for i = 1, #flat, 2 do
    rec[flat[i]] = flat[i + 1]
  end
  return rec
end

-- writeRecord replaces the record with the fields of rec and gives it the lock's lifetime.
local function writeRecord(rec)
  redis.call('DEL', KEYS[2])
  local flat = {}
  for k, v in pairs(rec) do
    flat[#flat + 1] = k
    flat[#flat + 1] = v
  end
  if #flat > 0 then
    redis.call('HSET', KEYS[2], unpack(flat))
    followLock()
  end
end

-- nowMs is the server's time in absolute milliseconds.
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- nextFence issues the lock's next fencing token: the server time in microseconds (sec and us,
-- TIME's two parts as numbers), or one more than the last token when that is not below it (the clock ran
-- backwards, or two takes fell in one microsecond), and remembers it in KEYS[6] for
-- FENCE_MEMORY ms. Tokens stay below 2^53 (exact as Lua and JavaScript numbers) until the year
-- 2255. The new token is written and the last one read in one SET ... GET (Redis 6.2); it is
-- written again in the rare case that the last one was not below it. Older servers read first.
-- It returns the token and its decimal text.
local function nextFence(sec, us)
  local token = sec * 1000000 + us
  local text = decimal(token)
  local last = redis.pcall('SET', KEYS[6], text, 'PX', FENCE_MEMORY, 'GET')
  local written = type(last) ~= 'table' -- an error reply: a server without SET ... GET
  if not written then
    last = redis.call('GET', KEYS[6])
  end
  last = tonumber(last or 0) or 0
  if last >= token then
    token = last + 1
    text = decimal(token)
    written = false
  end
  if not written then
    redis.call('SET', KEYS[6], text, 'PX', FENCE_MEMORY)
  end
  return token, text
end

-- queueHead drops dead tickets (expired or gone) from the front of the queue and returns the
-- live head, or nil when nobody queues.
local function queueHead()
  local now
  while true do
    local head = redis.call('LINDEX', KEYS[3], 0)
    if not head then
      return nil
    end
    local exp = redis.call('ZSCORE', KEYS[4], head)
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
-- which it makes within ttl / 2 ms: the marker is made to live ttl ms when it has less than
-- half of that left, so it is never shortened (another Provider's waiters may need longer) and
-- is written at most once per ttl / 2 however many waiters poll.
local function markWaiting(ttl)
  if redis.call('PTTL', KEYS[7]) < ttl / 2 then
    redis.call('SET', KEYS[7], '1', 'PX', ttl)
  end
end

-- announceFree tells the waiters that the lock is free: the queue head, if any, is the one to
-- take it (see listen.go). Without a waiter marker no waiter of ours sleeps on the lock (every
-- one marks it in the same script run as the attempt that found it held), and nothing is sent.
local function announceFree()
  if redis.call('EXISTS', KEYS[7]) == 1 then
    redis.call('PUBLISH', ARGV[#ARGV], (queueHead() or '') .. '\n' .. KEYS[1])
  end
end

-- Stock's turns (share.go has the rule and docs/waiting.md the reasons): after our clients
-- have held the lock for SHARE_RUN ms in a row while a process that writes no holder record
-- contends, the release that frees it leaves it free for that process for SHARE_WINDOW ms.
-- SHARE_RUN, SHARE_WINDOW and SHARE_MEMORY are defined in front of this file (share.go).

-- ourHold tells whether the lock, held by owner, is held by one of ours: its record names the
-- owner and, for an owner that is not an execute call's (those are unique per call, so a record
-- of theirs is always the hold's), has the lock's expiry. A record of a shared owner ("*", a
-- named owner) with another expiry was left by an earlier hold of ours that a process that
-- writes no record released before taking the lock again (docs/fencing.md).
local function ourHold(owner)
  if redis.call('HGET', KEYS[2], 'owner') ~= owner then
    return false
  end
  return string.sub(owner, 1, 8) == 'execute:' or sameAt(expireAt(KEYS[2]), expireAt(KEYS[1]))
end

-- noteForeign remembers that the lock is held by a process that writes no holder record (or a
-- record that does not describe the hold: see ourHold), and ends our run. It returns true when
-- that process's run, as far as ours have seen it, has lasted SHARE_RUN ms: its turn is over,
-- and our waiters may try harder to find the lock free between its release and its re-take.
local function noteForeign()
  local owner = redis.call('GET', KEYS[1])
  if owner and not ourHold(owner) then
    local now = nowMs()
    redis.call('HDEL', KEYS[5], 'since', 'yield')
    redis.call('HSET', KEYS[5], 'seen', now)
    redis.call('HSETNX', KEYS[5], 'theirs', now)
    redis.call('PEXPIRE', KEYS[5], SHARE_MEMORY)
    return now - tonumber(redis.call('HGET', KEYS[5], 'theirs')) >= SHARE_RUN
  end
  return false
end

-- shareState reads the share record in one command: whether it exists ("seen" is set whenever
-- it does) and its "yield" (false when not set).
local function shareState()
  local v = redis.call('HMGET', KEYS[5], 'yield', 'seen')
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
-- a run of ours on the lock begins.
local function startRun(shared, now)
  if shared and redis.call('HSETNX', KEYS[5], 'since', now) == 1 then
    redis.call('HDEL', KEYS[5], 'yield', 'theirs')
  end
end

-- endRun, called by a delete of ours that freed the lock, leaves it to the others for
-- SHARE_WINDOW ms when our run has lasted SHARE_RUN ms.
local function endRun()
  local since = redis.call('HGET', KEYS[5], 'since')
  if since then
    local now = nowMs()
    if now - tonumber(since) >= SHARE_RUN then
      redis.call('HDEL', KEYS[5], 'since')
      redis.call('HSET', KEYS[5], 'yield', now + SHARE_WINDOW)
    end
  end
end
