-- error.lua: reply with an error, so that a SET or DELEX the emulator rejects itself
-- can still be queued inside MULTI and fail at EXEC as the real command does there.
--
-- KEYS     none
-- ARGV[1]  the error message, code first ("ERR syntax error")
return redis.error_reply(ARGV[1])
