-- Compare-and-PEXPIRE: sets the TTL only while the lock holds the caller's token, so
-- an expired handle can never extend a later owner's lock.
-- KEYS[1]: the lock key
-- ARGV[1]: the owner token
-- ARGV[2]: the new TTL in milliseconds
-- Returns 1 if the TTL was set, 0 otherwise.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
