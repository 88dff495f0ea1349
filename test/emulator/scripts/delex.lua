-- delex.lua: DELEX key [IFEQ v | IFNE v], in one atomic step, as Redis 8.4 does natively.
--
-- KEYS[1]  the key
-- ARGV[1]  the condition as given, upper-cased: "" for none (delete any type, like
--          DEL), "IFEQ", "IFNE"; "IFDEQ"/"IFDNE" (digests, not emulated) and anything
--          else are errors once the key is known to exist
-- ARGV[2]  the value compared with
--
-- Replies: 1 deleted, 0 not (a missing key is 0 before the condition is even looked
-- at, as Redis 8.6.3 does).
local key = KEYS[1]
local kind = redis.call('TYPE', key)['ok']
if kind == 'none' then
  return 0
end
local cond = ARGV[1]
if cond == '' then
  return redis.call('DEL', key)
end
if cond == 'IFDEQ' or cond == 'IFDNE' then
  return redis.error_reply('ERR emulator: DELEX ' .. cond .. ' (digest conditions) is not emulated')
end
if cond ~= 'IFEQ' and cond ~= 'IFNE' then
  return redis.error_reply('ERR Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE')
end
if kind ~= 'string' then
  return redis.error_reply('ERR Key should be of string type if conditions are specified')
end
local equal = redis.call('GET', key) == ARGV[2]
if equal == (cond == 'IFEQ') then
  return redis.call('DEL', key)
end
return 0
