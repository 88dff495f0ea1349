// Package history records what fault-scenario tests did and checks the record
// for the safety violations the library promises cannot happen.
//
// A [Recorder] stamps each operation with monotonic times (call and return,
// measured from the recorder's start) and an [Outcome]: ok, failed (known not
// to have taken effect) or unknown (it may or may not have taken effect, as
// after a timeout or a connection reset mid-command). The checkers read that
// record and return one [Violation] per broken promise; a scenario asserts the
// count is zero and prints it as a figure:
//
//   - [Section] is a resource that logs entries and exits; [CheckExclusive]
//     finds two holders inside one critical section at once.
//   - [CheckTokensIncrease] finds a fencing token that is not above every token
//     handed out by an acquisition that finished before it began.
//   - [CheckFencedRegister] runs porcupine over writes to a fenced resource and
//     reads of it, with a model that refuses a token lower than the highest
//     accepted one; it finds a stale write accepted or a fresh one refused.
//   - [CheckOwnReplies] finds a reply handed to the wrong caller: every request
//     carries a unique id that its reply must echo.
//   - [CheckNoLostWrites] finds an acknowledged write missing from the final
//     state.
//
// Operations whose outcome is unknown are never counted against the system:
// they may have happened at any time after their call, or never.
//
// # Concurrency
//
// A Recorder and a Section are safe for concurrent use by any number of
// goroutines. The checkers are pure functions of their arguments. The package
// starts no goroutines (porcupine's checker runs its own and waits for them).
package history
