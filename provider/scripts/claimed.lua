-- Tell whether owner ARGV[1] holds KEYS[1] under acquisition call ARGV[2]: 1 if so, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] and redis.call('HGET', KEYS[2], 'claim') == ARGV[2] then
  return 1
end
return 0
