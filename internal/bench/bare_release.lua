-- The bare loop's release: delete KEYS[1] only while it still holds ARGV[1], the token its SET NX
-- wrote. 1 when deleted, 0 when the key expired or is another caller's.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
