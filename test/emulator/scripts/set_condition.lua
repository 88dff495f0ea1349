-- set_condition.lua: SET key value with a value condition, in one atomic step, as
-- Redis 8.4 (IFEQ, IFNE) and Valkey 8.1+ (IFEQ) do natively.
--
-- KEYS[1]  the key
-- ARGV[1]  the new value
-- ARGV[2]  the condition: "IFEQ" (set only when the current value equals ARGV[3]; a
--          missing key is never created) or "IFNE" (set unless it equals ARGV[3]; a
--          missing key is created)
-- ARGV[3]  the value compared with
-- ARGV[4]  "1" when NX was given too (Redis 8.4 accepts "IFEQ v NX": it never sets)
-- ARGV[5]  "1" for GET: reply with the old value (null when missing) instead of OK/null
-- ARGV[6…] the expiry arguments handed to SET as they are (EX n | PX n | EXAT n |
--          PXAT n | KEEPTTL), already validated; none clears the TTL like a plain SET
--
-- Replies: OK when set, null when not, the old value with GET, WRONGTYPE when the key
-- holds another type.
local key = KEYS[1]
local kind = redis.call('TYPE', key)['ok']
local old = false
if kind ~= 'none' then
  if kind ~= 'string' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
  end
  old = redis.call('GET', key)
end
local set
if ARGV[2] == 'IFEQ' then
  set = old ~= false and old == ARGV[3]
else
  set = old == false or old ~= ARGV[3]
end
if ARGV[4] == '1' and old ~= false then
  set = false
end
if set then
  redis.call('SET', key, ARGV[1], unpack(ARGV, 6))
end
if ARGV[5] == '1' then
  return old
end
if set then
  return redis.status_reply('OK')
end
return false
