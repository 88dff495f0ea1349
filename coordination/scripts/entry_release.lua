-- Releases one entry (a semaphore permit, a read or a write lease) of a hash whose
-- fields map owner entries to their expiry on the server's clock (TIME).
--
-- KEYS[1]  the semaphore's or read/write lock's key
-- ARGV[1]  the entry's field ("p:", "r:" or "w:" followed by the owner token)
--
-- Returns 1 when a live entry was deleted, 0 when it was gone or had expired. The key
-- goes with its last entry (a semaphore's stored capacity with it).
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then
  return 0
end
redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('HLEN', KEYS[1]) == 1 and redis.call('HEXISTS', KEYS[1], 'capacity') == 1 then
  redis.call('DEL', KEYS[1])
end
if tonumber(cur) <= now then
  return 0
end
return 1
