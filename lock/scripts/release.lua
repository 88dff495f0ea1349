-- Compare-and-delete: deletes the lock only while it holds the caller's token, so an
-- expired handle can never delete a later owner's lock.
-- KEYS[1]: the lock key
-- ARGV[1]: the owner token
-- Returns 1 if the key was deleted, 0 otherwise.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
