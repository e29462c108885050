-- Delete KEYS[1] and its holder record KEYS[2] only while owner ARGV[1] still holds it.
-- Same logic as @medusajs/locking-redis 2.21.2 releaseLock (exact compare, DEL; a key of another
-- type is an error, as stock's GET makes it).
-- A release announces the free lock on the wake-up channel when someone contends (see lib.lua,
-- freeLock). One MGET reads the owner and the contention marker, so an uncontended release runs
-- two commands: MGET and DEL.
local v = redis.call('MGET', KEYS[1], KEYS[6])
if v[1] == ARGV[1] then
  freeLock('DEL', v[2] ~= false)
  return 1
end
if v[1] == false then
  redis.call('GET', KEYS[1]) -- MGET reads a key of another type as missing: stock's GET fails
end
return 0
