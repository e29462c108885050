-- Force-release KEYS[1] (and its holder record KEYS[2]) for the operator, and releaseAll: only if
-- owner ARGV[1] holds it and, when ARGV[2] is not empty, the hold is still as ARGV[2] saw it: the
-- fencing token and the holding process (host, pid, program, client kind) of its holder record,
-- joined by NUL bytes (our clients' holds: a new hold has a new token, a re-entry from another
-- process writes its own process), or "none" for a hold without a holder record that describes
-- it (stock Medusa's), so that what the operator did not see since they looked is not cut off.
-- Stock 2.21.2 reads with GET and unlinks in a second pipeline, so a key re-acquired in between
-- by another owner was lost; here the check and the delete are one atomic step. A key of another
-- type is skipped instead of failing the batch.
-- ARGV[3] is the mode. 'tell': a live lease of ours (its record has "lease", and the lock has
-- more than a tenth of that TTL left, so its holder's own deadline has not passed) is not deleted
-- but revoked: the record notes when, its holder's
-- next renewal fails (extend.lua), and "!revoke <claim>\n<KEYS[1]>" is published on the channel,
-- so that the holder ends its lease at once and then releases the key (docs/safety.md,
-- "Force-release"). Any other hold, which cannot be told (stock's, a plain acquisition's, a lease
-- that stopped renewing), is unlinked at once. 'now': unlinked at once whatever holds it. An
-- unlink announces the free key on the channel, waiters or not, so that holders of ours hear it.
-- Returns 0 when nothing was done, 1 when the key was unlinked (on 'now', or because its holder
-- cannot be told), 2 when the holder was told.
if redis.call('TYPE', KEYS[1]).ok ~= 'string' then
  return 0
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local ours, rec = ourHold(ARGV[1])
if ARGV[2] ~= '' then
  local seen = 'none'
  if ours and rec.fence then
    -- The pid as the Go side reads it: a whole number, 0 when missing or not one.
    local pid = tonumber(rec.pid)
    if pid == nil or pid ~= math.floor(pid) then
      pid = 0
    end
    seen = table.concat({rec.fence, rec.host or '', decimal(pid), rec.prog or '', rec.kind or ''}, '\0')
  end
  if seen ~= ARGV[2] then
    return 0
  end
end
if ARGV[3] == 'tell' and ours and rec.lease and rec.claim then
  -- A lease's holder believes until (its last confirmed renewal's send time) + TTL - TTL/10,
  -- which is before the lock's expiry less a tenth of the TTL: past that, it has stopped
  -- believing (it stopped renewing) and the key is freed at once.
  local now = nowMs()
  local at = expireAt(KEYS[1])
  if at < 0 or now < at - tonumber(rec.lease) * 100 then
    if not rec.revoked then
      rec.revoked = decimal(now)
      redis.call('SET', KEYS[2], joinRecord(rec), 'KEEPTTL')
    end
    redis.call('PUBLISH', ARGV[#ARGV], '!revoke ' .. rec.claim .. '\n' .. KEYS[1])
    return 2
  end
end
freeLock('UNLINK', true)
return 1
