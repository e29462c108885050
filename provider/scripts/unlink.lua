-- Compare-and-unlink for releaseAll and the operator's force-release: UNLINK KEYS[1] (and its
-- holder record KEYS[2]) only if owner ARGV[1] holds it at delete time and, when ARGV[2] is not
-- empty, the hold is still as ARGV[2] saw it: the fencing token and the holding process (host,
-- pid, program, client kind) of its holder record, joined by NUL bytes (our clients' holds: a
-- new hold has a new token, a re-entry from another process writes its own process), or "none"
-- for a hold without a holder record that describes it (stock Medusa's), so that what the
-- operator did not see since they looked is not cut off. Stock 2.21.2 reads with
-- GET and unlinks in a second pipeline, so a key re-acquired in between by another owner was
-- lost; here the check and the delete are one atomic step. A key of another type is skipped
-- (returns 0) instead of failing the batch. An unlink announces the free lock on the wake-up
-- channel (see lib.lua, freeLock).
if redis.call('TYPE', KEYS[1]).ok ~= 'string' then
  return 0
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[2] ~= '' then
  local seen = 'none'
  local ours, rec = ourHold(ARGV[1])
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
freeLock('UNLINK')
return 1
