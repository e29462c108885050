-- Delete KEYS[1] and its holder record KEYS[2] only while owner ARGV[1] still holds it.
-- Same logic as @medusajs/locking-redis 2.21.2 releaseLock (exact compare, DEL).
-- A release announces the free lock on the wake-up channel when someone contends (see lib.lua,
-- freeLock); an uncontended release runs three commands: GET, EXISTS and DEL.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  freeLock('DEL')
  return 1
end
return 0
