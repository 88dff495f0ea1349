-- Compare-and-set: passes the lock to the next owner only while it holds the
-- releasing owner's token, with the next owner's TTL, so that a release hands the key
-- to a waiting acquisition in one step, and an expired handle can never pass on a
-- later owner's lock.
-- KEYS[1]: the lock key
-- ARGV[1]: the releasing owner's token
-- ARGV[2]: the next owner's token
-- ARGV[3]: the next owner's TTL in milliseconds
-- Returns 1 if the lock was passed, 0 otherwise.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
