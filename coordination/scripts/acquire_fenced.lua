-- Takes a fenced lease: the fence counter advances and the lease key gets the owner
-- token for a TTL, if no one holds it. One script, so no other client can run between
-- the two writes: every holder's fencing token is above every earlier one's.
--
-- The counter goes first. A script that fails halfway keeps the writes it made, and
-- INCR is the write that can fail (a fence key that is not a counter): after it fails
-- nothing was taken, whereas a lease set before it would stay for its whole TTL with no
-- handle to release it. A counter that advanced for a SET that then failed only skips
-- a token, which fencing allows.
--
-- KEYS[1]  lease key (holds the owner token while the lease lasts)
-- KEYS[2]  fence key (the persistent counter; never given a TTL)
-- ARGV[1]  owner token
-- ARGV[2]  lease TTL in milliseconds
--
-- Returns the new fencing token (an integer), or nil when another owner holds the lease.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return false
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return token
