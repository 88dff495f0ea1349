-- delifeq.lua: DELIFEQ key value, in one atomic step, as Valkey 9.0 does natively.
--
-- KEYS[1]  the key
-- ARGV[1]  the value the key must hold to be deleted
--
-- Replies: 1 deleted, 0 not (missing or another value), WRONGTYPE when the key holds
-- another type.
local key = KEYS[1]
local kind = redis.call('TYPE', key)['ok']
if kind == 'none' then
  return 0
end
if kind ~= 'string' then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
if redis.call('GET', key) == ARGV[1] then
  return redis.call('DEL', key)
end
return 0
