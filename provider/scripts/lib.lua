-- Shared by every script below (prepended when they are loaded).
-- KEYS[1] is a lock key; KEYS[2] is its holder record: a hash beside the lock, outside the
-- namespace and in the lock's Cluster slot, written by the acquisition that last took or
-- re-entered the lock (stock Medusa writes none):
--   owner  the lock's owner
--   claim  the acquisition call that wrote it
--   at     the lock's expiry that call left (absolute ms; -1: none), so that a later change of
--          the lock by anyone, stock included, can be told
--   re     1 when that call re-entered a lock its owner already held
--   prev   (re-entries only) JSON {at, rec}: the lock's expiry and record before the re-entry

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

-- sameExpiry tells whether the lock still has the expiry a claim left (see "at").
local function sameExpiry(at)
  return at ~= nil and math.abs(expireAt(KEYS[1]) - tonumber(at)) <= 2
end

-- followLock gives the record the lock's lifetime: it expires when the lock does.
local function followLock()
  local at = expireAt(KEYS[1])
  if at >= 0 then
    redis.call('PEXPIREAT', KEYS[2], at)
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
