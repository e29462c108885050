-- Acquire KEYS[1] for owner ARGV[1] with a TTL of ARGV[2] whole seconds (0: no expiry).
-- Same logic as @medusajs/locking-redis 2.21.2 acquireLock, with one fix: the same owner
-- re-enters whether or not the caller queues (stock never re-enters on its queue path).
-- Returns {1} for a fresh lock, {0} when someone else holds it, and {2, pttl} for a re-entry
-- by the same owner, pttl being the key's PTTL before its TTL was rewritten (-1: no expiry),
-- so that a call that fails on another key can put it back.
local ttl = tonumber(ARGV[2])
local ok
if ttl > 0 then
  ok = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ttl)
else
  ok = redis.call('SET', KEYS[1], ARGV[1], 'NX')
end
if ok then
  return {1}
end
local current = redis.call('GET', KEYS[1])
-- The anonymous owner "*" is never re-entrant, exactly as in stock.
if current == '*' then
  return {0}
end
if current == ARGV[1] then
  local pttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then
    redis.call('SET', KEYS[1], ARGV[1], 'XX', 'EX', ttl)
  else
    redis.call('SET', KEYS[1], ARGV[1], 'XX')
  end
  return {2, pttl}
end
return {0}
