-- Renew KEYS[1] to ARGV[2] seconds only while owner ARGV[1] still holds it; the holder record
-- follows the lock, and notes the new expiry when claim ARGV[3] wrote it.
-- Same logic as @medusajs/locking-redis 2.21.2 extendLock: a lapsed lease is never revived.
-- Returns 1 when renewed, 0 when the key is gone or held by another owner, and 2, renewing
-- nothing, when the owner's hold was revoked by an operator (revoke.lua): the holder ends its
-- lease, and the key is freed when it releases it or when it expires. With ARGV[4] 'check' it
-- only checks (1 when the key is still the owner's and not revoked) and extends nothing.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local rec = readRecord()
if rec and rec.owner == ARGV[1] and rec.revoked then
  return 2 -- whichever claim of the owner renews: the hold was revoked
end
if ARGV[4] == 'check' then
  return 1
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
if rec then
  local at = expireAt(KEYS[1])
  if rec.claim == ARGV[3] then
    rec.at = decimal(at)
    redis.call('SET', KEYS[2], joinRecord(rec))
  end
  expireRecordAt(at)
end
return 1
