-- Delete KEYS[1] and its holder record KEYS[2] only while owner ARGV[1] still holds it.
-- Same logic as @medusajs/locking-redis 2.21.2 releaseLock (exact compare, DEL).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1], KEYS[2]) > 0 and 1 or 0
end
return 0
