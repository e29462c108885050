-- Give KEYS[1] back the lifetime ARGV[2] (milliseconds, at least 1; negative: no expiry) it had
-- left before a failed acquisition re-entered it, only while owner ARGV[1] still holds it.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local pttl = tonumber(ARGV[2])
if pttl < 0 then
  redis.call('PERSIST', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], pttl)
end
return 1
