-- Acquire KEYS[1] for owner ARGV[1] with a TTL of ARGV[2] whole seconds (0: no expiry), as
-- acquisition call ARGV[3], and write its holder record KEYS[2] (see lib.lua).
-- Same logic as @medusajs/locking-redis 2.21.2 acquireLock, with one fix: the same owner
-- re-enters whether or not the caller queues (stock never re-enters on its queue path).
-- ARGV[4] is the fair-queue mode: '' ignores the queue (stock's behaviour); 'check' takes a
-- free lock only when nobody else queues for it; 'join' does the same and, when it cannot take
-- the lock, joins (or stays in) the queue with ticket ARGV[3], live for ARGV[5] ms. A re-entry
-- never queues. Taking the lock leaves the queue.
-- ARGV[6] is, for the attempts of a waiting call, the life in ms of the waiter marker that such
-- an attempt sets when it does not take the lock (see lib.lua, markWaiting), and '' for a
-- try-once acquisition. Only a waiting call leaves a free lock to processes that write no
-- holder record in their turn (see lib.lua, stock's turns); a try-once acquisition takes a free
-- lock, as stock's does.
-- ARGV[7] to ARGV[10] name the taking process in the record: host, pid, program, client kind.
-- Returns {status, fencing token}: status 1 for a fresh lock (with a new token), 0 when someone
-- else holds it (or is ahead in the queue), 2 for a re-entry by the same owner (with the hold's
-- token, or a new one when no record of ours describes the hold), -n when the lock is free but
-- left to others for n more ms, and 3 when it is held by a process that writes no holder record
-- whose turn is over; the token is 0 unless the call holds the lock.
local ttl = tonumber(ARGV[2])
local mode = ARGV[4]
local fair = mode == 'join' or mode == 'check'
local waiting = ARGV[6] ~= ''
local function held(status)
  if mode == 'join' then
    joinQueue(ARGV[3], tonumber(ARGV[5]))
  end
  if waiting then
    markWaiting(tonumber(ARGV[6]))
  end
  return {status or 0, 0}
end
-- holdRecord completes rec with the hold's start and fencing token (writeHold adds the taking
-- process): since and fence when the call joins a hold, else now (TIME t) and a new token. It
-- returns rec and the token.
local function holdRecord(rec, t, since, fence)
  local sec, us = t and tonumber(t[1]), t and tonumber(t[2])
  if not since then
    since = decimal(sec * 1000 + math.floor(us / 1000))
  end
  local token
  if fence then
    token = tonumber(fence)
  else
    token, fence = nextFence(sec, us)
  end
  rec.since, rec.fence = since, fence
  return rec, token
end
-- writeHold replaces the record with rec, a hold from holdRecord (with re and prev for a
-- re-entry), and gives it the lock's lifetime (at and atText: see followLock). It is
-- writeRecord with the fields named: walking the table costs Redis more than the write.
local function writeHold(rec, at, atText)
  redis.call('DEL', KEYS[2])
  local host, pid, prog, kind = ARGV[7], ARGV[8], ARGV[9], ARGV[10]
  if rec.re then
    redis.call('HSET', KEYS[2], 'owner', rec.owner, 'claim', rec.claim, 'at', atText, 'host', host, 'pid', pid,
      'prog', prog, 'kind', kind, 'since', rec.since, 'fence', rec.fence, 're', rec.re, 'prev', rec.prev)
  else
    redis.call('HSET', KEYS[2], 'owner', rec.owner, 'claim', rec.claim, 'at', atText, 'host', host, 'pid', pid,
      'prog', prog, 'kind', kind, 'since', rec.since, 'fence', rec.fence)
  end
  followLock(at, atText)
end
local queued = false -- the queue is not empty: the caller's ticket may be in it
if fair then
  local head = queueHead()
  queued = head ~= nil
  if head and head ~= ARGV[3] then
    local current = redis.call('GET', KEYS[1])
    if current == '*' or current ~= ARGV[1] then
      noteForeign()
      return held()
    end
  end
end
local shared, yield = shareState()
if waiting and yield then
  local left = yieldLeft(yield)
  if left > 0 and redis.call('EXISTS', KEYS[1]) == 0 then
    return held(-left)
  end
end
local ok
if ttl > 0 then
  ok = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2])
else
  ok = redis.call('SET', KEYS[1], ARGV[1], 'NX')
end
if ok then
  local t = redis.call('TIME')
  local at = expireAt(KEYS[1])
  local atText = decimal(at)
  local rec, token = holdRecord({owner = ARGV[1], claim = ARGV[3]}, t)
  writeHold(rec, at, atText)
  startRun(shared, rec.since)
  if queued then
    leaveQueue(ARGV[3])
  end
  return {1, token}
end
local current = redis.call('GET', KEYS[1])
-- The anonymous owner "*" is never re-entrant, exactly as in stock.
if current == '*' or current ~= ARGV[1] then
  if noteForeign() then
    return held(3)
  end
  return held()
end
-- A re-entry: keep what the lock and its record were before, each with its own expiry, so that
-- a call that fails can put both back exactly. The record is the hold's only when it names the
-- owner and has the lock's expiry (every script of ours gives it that: followLock). One of
-- another expiry was left by an earlier hold of ours that a process that writes no record
-- (stock, under the same owner id) released before taking the key again, or describes a live
-- hold of ours that such a process renewed: the re-entry does not join it (a new hold: since
-- now, a new token), and a give-back puts it back as it was (our holder's next renewal then
-- gives it the lock's expiry again).
local prev = {at = expireAt(KEYS[1])}
local before = readRecord()
local joins = false
if before then
  prev.recAt = expireAt(KEYS[2])
  joins = before.owner == ARGV[1] and sameAt(prev.recAt, prev.at)
  before.prev = nil -- one level is kept; "re" still marks an older re-entry
  prev.rec = before
end
if ttl > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'XX', 'EX', ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[1], 'XX')
end
local hold = joins and before or {} -- the hold this re-entry joins
local at = expireAt(KEYS[1])
local atText = decimal(at)
local rec, token = holdRecord({owner = ARGV[1], claim = ARGV[3], re = 1, prev = cjson.encode(prev)},
  (not hold.since or not hold.fence) and redis.call('TIME'), hold.since, hold.fence)
writeHold(rec, at, atText)
if queued then
  leaveQueue(ARGV[3])
end
return {2, token}
