-- Takes a read or a write lease: readers share, a writer excludes readers and writers.
-- Leases whose expiry has passed on the server's clock (TIME) are reclaimed first.
--
-- KEYS[1]  read/write key: a hash of "r:<owner token>" and "w:<owner token>" -> the
--          lease's expiry (server ms)
-- ARGV[1]  lease field: "r:" (read) or "w:" (write) followed by the owner token
-- ARGV[2]  lease TTL in milliseconds
--
-- Returns 1 when taken, {0, ms} when a live lease excludes it (ms: until the first
-- excluding lease expires, so a waiter knows when one can end without a release). The
-- key expires with its last lease. No queue: a writer waiting behind continuous
-- readers can starve.
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local fields = redis.call('HGETALL', KEYS[1])
local readers, writer, last = 0, false, 0
local firstReader, firstWriter = nil, nil
for i = 1, #fields, 2 do
  local kind = string.sub(fields[i], 1, 2)
  if kind == 'r:' or kind == 'w:' then
    local exp = tonumber(fields[i + 1])
    if exp <= now then
      redis.call('HDEL', KEYS[1], fields[i])
    else
      if kind == 'w:' then
        writer = true
        if firstWriter == nil or exp < firstWriter then firstWriter = exp end
      else
        readers = readers + 1
        if firstReader == nil or exp < firstReader then firstReader = exp end
      end
      if exp > last then last = exp end
    end
  end
end
if writer then
  return {0, firstWriter - now}
end
if string.sub(ARGV[1], 1, 2) == 'w:' and readers > 0 then
  return {0, firstReader - now}
end
local exp = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], ARGV[1], exp)
redis.call('PEXPIREAT', KEYS[1], math.max(exp, last))
return 1
