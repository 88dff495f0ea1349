-- Renews one entry (a semaphore permit, a read or a write lease) of a hash whose
-- fields map owner entries to their expiry on the server's clock (TIME).
--
-- KEYS[1]  the semaphore's or read/write lock's key
-- ARGV[1]  the entry's field ("p:", "r:" or "w:" followed by the owner token)
-- ARGV[2]  new TTL in milliseconds, from now
--
-- Returns 1 when renewed, 0 when the entry is gone or expired (an expired one is
-- removed: it must not come back to life).
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then
  return 0
end
if tonumber(cur) <= now then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 0
end
local exp = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], ARGV[1], exp)
-- The key lives as long as its longest entry; a shorter renewal leaves it be.
if now + redis.call('PTTL', KEYS[1]) < exp then
  redis.call('PEXPIREAT', KEYS[1], exp)
end
return 1
