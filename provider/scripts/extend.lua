-- Renew KEYS[1] to ARGV[2] seconds only while owner ARGV[1] still holds it; the holder record
-- follows the lock, and notes the new expiry when claim ARGV[3] wrote it.
-- Same logic as @medusajs/locking-redis 2.21.2 extendLock: a lapsed lease is never revived.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
local rec = readRecord()
if rec then
  local at = expireAt(KEYS[1])
  if rec.claim == ARGV[3] then
    rec.at = decimal(at)
    redis.call('SET', KEYS[2], joinRecord(rec))
  end
  expireRecordAt(at)
end
return 1
