-- Runs one write command on a resource key only if the presented fencing token is at
-- least the highest token the resource has accepted, and records it. The check, the
-- write and the record happen in one script, so no other writer can run in between.
--
-- KEYS[1]  accepted key: the highest fencing token accepted (decimal); never expires
-- KEYS[2]  resource key: the command's key
-- ARGV[1]  fencing token (a positive decimal integer without leading zeros)
-- ARGV[2]  the write command's name (SET, HSET, RPUSH, ...)
-- ARGV[3+] the command's arguments after its key
--
-- Returns {1, reply} when the write ran (reply is missing when the command answered
-- nil), {0, highest accepted token} when it was refused as stale, or the command's
-- error.
local token = ARGV[1]
local seen = redis.call('GET', KEYS[1])
-- Tokens are compared as decimal strings (length, then bytes), which is exact for any
-- 64-bit counter; Lua numbers are doubles and would not be above 2^53.
local function less(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
if seen and less(token, seen) then
  return {0, seen}
end
local reply = redis.pcall(ARGV[2], KEYS[2], unpack(ARGV, 3))
if type(reply) == 'table' and reply.err then
  return reply
end
if not seen or less(seen, token) then
  redis.call('SET', KEYS[1], token)
end
return {1, reply}
