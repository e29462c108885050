-- Acquire KEYS[1] for owner ARGV[1] with a TTL of ARGV[2] whole seconds (0: no expiry), as
-- acquisition call ARGV[3], and write its holder record KEYS[2] (see lib.lua).
-- Same logic as @medusajs/locking-redis 2.21.2 acquireLock, with one fix: the same owner
-- re-enters whether or not the caller queues (stock never re-enters on its queue path).
-- ARGV[4] is the fair-queue mode: '' ignores the queue (stock's behaviour); 'check' takes a
-- free lock only when nobody else queues for it; 'join' does the same and, when it cannot take
-- the lock, joins (or stays in) the queue with ticket ARGV[3], live for ARGV[5] ms. A re-entry
-- never queues. Taking the lock leaves the queue.
-- ARGV[6] is, for the attempts of a waiting call, the life in ms of the contention marker that
-- such an attempt sets when it does not take the lock (see lib.lua, markWaiting), and '' for a
-- try-once acquisition.
-- ARGV[7] is the taking process for the record: host, pid, program and client kind joined by
-- NUL bytes.
-- ARGV[9] is, for a lease, its TTL in seconds (the record's "lease"), and '' for a plain
-- acquisition.
-- ARGV[8] is '1' when the attempt honours stock's turns (see lib.lua): it reads the share
-- record, and a waiting call's attempt then leaves a free lock to processes that write no
-- holder record in their turn. The caller sets it only where contention was seen
-- (provider/share.go), so that the uncontended path reads nothing beside the lock; a try-once
-- acquisition takes a free lock, as stock's does.
-- Returns {status, fencing token}: status 1 for a fresh lock (with a new token), 0 when someone
-- else holds it (or is ahead in the queue), 2 for a re-entry by the same owner (with the hold's
-- token, or a new one when no record of ours describes the hold), -n when the lock is free but
-- left to others for n more ms, and 3 when it is held by a process that writes no holder record
-- whose turn is over; the token is 0 unless the call holds the lock.
-- An uncontended take runs three commands: TIME, SET NX and the record's SET.
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
-- setAt runs SET key value [cond] with the absolute expiry at (ms; below 0: none) and returns
-- whether the key was set. A server before Redis 6.2, which has no PXAT, sets and then
-- PEXPIREATs.
local function setAt(key, value, at, cond)
  local args = {'SET', key, value}
  if cond then
    args[#args + 1] = cond
  end
  if at < 0 then
    return redis.call(unpack(args))
  end
  args[#args + 1] = 'PXAT'
  args[#args + 1] = decimal(at)
  local ok = redis.pcall(unpack(args))
  if type(ok) == 'table' and ok.err then
    args[#args] = nil
    args[#args] = nil
    ok = redis.call(unpack(args))
    if ok then
      redis.call('PEXPIREAT', key, decimal(at))
    end
  end
  return ok
end
local queued = false -- the queue is not empty: the caller's ticket may be in it
local current -- the lock's owner, once read
if fair then
  local head = queueHead()
  queued = head ~= nil
  if head and head ~= ARGV[3] then
    current = redis.call('GET', KEYS[1])
    if current == '*' or current ~= ARGV[1] then
      noteForeign(current)
      return held()
    end
  end
end
local shared, yield = false, false
if ARGV[8] == '1' then
  shared, yield = shareState()
  if waiting and yield then
    local left = yieldLeft(yield)
    if left > 0 and redis.call('EXISTS', KEYS[1]) == 0 then
      return held(-left)
    end
  end
end
-- The server's time, read once: a new hold's start (absolute ms) and fencing token
-- (microseconds), and the expiry (absolute ms, -1 without TTL) that the lock and its record are
-- both given, to the millisecond. Neither gets a TTL of its own: Redis 7.0 reads its clock afresh
-- for each command of a script, so two TTLs set by two commands would lie apart by however long
-- Redis was held up between them (a preempted server: milliseconds or more), and the hold would
-- no longer be taken for ours (ourHold). The lock's lifetime counts from this reading, after the
-- request arrived, so it ends no earlier than the caller's own deadline allows for. Tokens stay
-- below 2^53, exact as Lua and JavaScript numbers, until the year 2255.
local clock = redis.call('TIME')
local micros = string.format('%06d', tonumber(clock[2]))
local now, nowToken = clock[1] .. string.sub(micros, 1, 3), clock[1] .. micros
local at = -1
if ttl > 0 then
  at = tonumber(now) + ttl * 1000
end
if setAt(KEYS[1], ARGV[1], at, 'NX') then
  local since, token = now, nowToken
  setAt(KEYS[2], recordText(ARGV[3], decimal(at), since, token, '', '', ARGV[9]), at)
  startRun(shared, since)
  if queued then
    leaveQueue(ARGV[3])
  end
  return {1, tonumber(token)}
end
current = current or redis.call('GET', KEYS[1])
-- The anonymous owner "*" is never re-entrant, exactly as in stock.
if current == '*' or current ~= ARGV[1] then
  if noteForeign(current) then
    return held(3)
  end
  return held()
end
-- A re-entry: keep what the lock and its record were before, each with its own expiry, so that
-- a call that fails can put both back exactly. The record is the hold's only when it names the
-- owner and has the lock's expiry (every script of ours gives it that). One of another expiry
-- was left by an earlier hold of ours that a process that writes no record (stock, under the
-- same owner id) released before taking the key again, or describes a live hold of ours that
-- such a process renewed: the re-entry does not join it (a new hold: since now, a new token),
-- and a give-back puts it back as it was (our holder's next renewal then gives it the lock's
-- expiry again).
local prev = {at = expireAt(KEYS[1])}
local before = readRecord()
local since, token
local lease = ARGV[9]
if before then
  prev.recAt = expireAt(KEYS[2])
  local joins = before.owner == ARGV[1] and sameAt(prev.recAt, prev.at)
  if joins and before.revoked then
    -- An operator revoked the hold (revoke.lua): its holders are being told to end it, and
    -- nobody of the owner may join it meanwhile.
    return held()
  end
  before.prev = nil -- one level is kept; "re" still marks an older re-entry
  prev.rec = joinRecord(before)
  if joins and before.since and before.fence then
    since, token = before.since, before.fence
  end
  if joins and lease == '' and before.lease then
    lease = before.lease -- a lease holds it still: it can be told of a revocation
  end
end
setAt(KEYS[1], ARGV[1], at, 'XX')
if not since then
  since, token = now, nowToken
end
setAt(KEYS[2], recordText(ARGV[3], decimal(at), since, token, '1', cjson.encode(prev), lease), at)
if queued then
  leaveQueue(ARGV[3])
end
return {2, tonumber(token)}
