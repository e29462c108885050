-- Tell whether owner ARGV[1] holds KEYS[1] under acquisition call ARGV[2]: if so the hold's
-- fencing token (the holder record's fence, above 0), else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  local rec = readRecord()
  if rec and rec.claim == ARGV[2] then
    return tonumber(rec.fence) or 0
  end
end
return 0
