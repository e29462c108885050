-- A fenced write (docs/fencing.md): set KEYS[1] to ARGV[2] for the holder of fencing token
-- ARGV[1], unless a holder with a higher token already wrote. KEYS[2] keeps the highest token
-- that wrote. Returns 1 when written, 0 when refused.
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local token = tonumber(ARGV[1])
if token < last then
  return 0
end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[1], ARGV[2])
return 1
