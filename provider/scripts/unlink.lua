-- Compare-and-unlink for releaseAll and the operator's force-release: UNLINK KEYS[1] (and its
-- holder record KEYS[2]) only if owner ARGV[1] holds it at delete time and, when ARGV[2] is not
-- empty, the hold is the one ARGV[2] names: its fencing token (our clients' holds), or "none"
-- for a hold without a holder record that describes it (stock Medusa's), so that a new hold
-- taken under the same owner since the operator looked is not cut off. Stock 2.21.2 reads with
-- GET and unlinks in a second pipeline, so a key re-acquired in between by another owner was
-- lost; here the check and the delete are one atomic step. A key of another type is skipped
-- (returns 0) instead of failing the batch. An unlink announces the free lock on the wake-up
-- channel (see lib.lua).
if redis.call('TYPE', KEYS[1]).ok ~= 'string' then
  return 0
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[2] ~= '' then
  local fence = ourHold(ARGV[1]) and redis.call('HGET', KEYS[2], 'fence')
  if (fence or 'none') ~= ARGV[2] then
    return 0
  end
end
redis.call('UNLINK', KEYS[1], KEYS[2])
endRun()
announceFree()
return 1
