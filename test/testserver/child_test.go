package testserver

import (
	"testing"
	"time"
)

// TestChildProcess is the child side of TestChildPauseResumeKill: it says
// ready, echoes what it is sent, and exits on "exit".
func TestChildProcess(t *testing.T) {
	if !IsChild() {
		t.Skip("runs only as the child of TestChildPauseResumeKill")
	}
	ChildSay("ready")
	in := ChildListen()
	for in.Scan() {
		if in.Text() == "exit" {
			return
		}
		ChildSay("echo %s", in.Text())
	}
}

func TestChildPauseResumeKill(t *testing.T) {
	if IsChild() {
		t.Skip("parent only")
	}
	c := StartChild(t, "TestChildProcess")
	c.Expect(t, "ready", 30*time.Second)
	c.Pause(t)
	if stopped, err := isStopped(c.Pid()); err == nil && !stopped {
		t.Fatal("child not stopped after Pause")
	}
	c.Send(t, "while-paused")
	c.Resume(t)
	if got := c.Expect(t, "echo ", 30*time.Second); got != "while-paused" {
		t.Fatalf("echo after resume = %q", got)
	}
	c.Send(t, "exit")
	if out, err := c.Wait(t, 30*time.Second); err != nil {
		t.Fatalf("child exit: %v\n%s", err, out)
	}

	k := StartChild(t, "TestChildProcess")
	k.Expect(t, "ready", 30*time.Second)
	k.Kill(t)
	if _, err := k.Wait(t, time.Second); err == nil {
		t.Fatal("killed child reports success")
	}
}
