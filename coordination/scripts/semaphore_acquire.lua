-- Takes a permit of a counting semaphore if one is free, reclaiming the permits whose
-- expiry has passed on the server's clock (TIME), never a client's.
--
-- KEYS[1]  semaphore key: a hash of "capacity" -> the capacity its live permits were
--          taken with, and "p:<owner token>" -> the permit's expiry (server ms)
-- ARGV[1]  permit field ("p:" followed by the owner token)
-- ARGV[2]  permit TTL in milliseconds (every permit expires)
-- ARGV[3]  capacity
--
-- Returns 1 when taken, {0, ms} when every permit is held (ms: until the first live
-- permit expires, so a waiter knows when one can free without a release), {-1, stored} when the
-- semaphore's live permits were taken with another capacity (nothing changes but the
-- reclaiming of expired permits). The capacity stored beside expired permits alone
-- binds nobody: the key can outlive its permits (a renewal shortened one).
-- The key expires with its last permit, so nothing outlives the permits.
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stored = redis.call('HGET', KEYS[1], 'capacity')
local fields = redis.call('HGETALL', KEYS[1])
local live, last, first = 0, 0, nil
for i = 1, #fields, 2 do
  if string.sub(fields[i], 1, 2) == 'p:' then
    local exp = tonumber(fields[i + 1])
    if exp <= now then
      redis.call('HDEL', KEYS[1], fields[i])
    else
      live = live + 1
      if exp > last then last = exp end
      if first == nil or exp < first then first = exp end
    end
  end
end
if live > 0 and stored and stored ~= ARGV[3] then
  return {-1, stored}
end
if live >= tonumber(ARGV[3]) then
  return {0, first - now}
end
local exp = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], ARGV[1], exp, 'capacity', ARGV[3])
redis.call('PEXPIREAT', KEYS[1], math.max(exp, last))
return 1
