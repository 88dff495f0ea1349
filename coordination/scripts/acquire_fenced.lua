-- Takes a fenced lease: the lease key gets the owner token for a TTL, if no one holds
-- it, and only then the fence counter advances. One script, so no other client can run
-- between the two writes: every holder's fencing token is above every earlier one's.
--
-- KEYS[1]  lease key (holds the owner token while the lease lasts)
-- KEYS[2]  fence key (the persistent counter; never given a TTL)
-- ARGV[1]  owner token
-- ARGV[2]  lease TTL in milliseconds
--
-- Returns the new fencing token (an integer), or nil when another owner holds the lease.
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return false
end
return redis.call('INCR', KEYS[2])
