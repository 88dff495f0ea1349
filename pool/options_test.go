package pool

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestNewValidatesOptions(t *testing.T) {
	dial := func(context.Context) (*fakeConn, error) { return &fakeConn{}, nil }
	tests := []struct {
		name    string
		opts    Options[*fakeConn]
		wantErr []string // substrings of the message; nil for success
	}{
		{"minimal", Options[*fakeConn]{Dial: dial, Size: 1}, nil},
		{"everything", Options[*fakeConn]{Dial: dial, Size: 4, MinIdle: 4, MaxLifetime: time.Hour,
			MaxIdleTime: time.Minute, HealthCheckAfter: time.Second}, nil},
		{"nil dial", Options[*fakeConn]{Size: 1}, []string{"Dial is nil"}},
		{"zero size", Options[*fakeConn]{Dial: dial}, []string{"Size is 0, must be at least 1"}},
		{"negative size", Options[*fakeConn]{Dial: dial, Size: -3}, []string{"Size is -3"}},
		{"min idle over size", Options[*fakeConn]{Dial: dial, Size: 2, MinIdle: 3}, []string{"MinIdle (3) exceeds Size (2)"}},
		{"negative min idle", Options[*fakeConn]{Dial: dial, Size: 2, MinIdle: -1}, []string{"MinIdle is -1"}},
		{"negative lifetime", Options[*fakeConn]{Dial: dial, Size: 1, MaxLifetime: -time.Second}, []string{"MaxLifetime is -1s"}},
		{"negative idle time", Options[*fakeConn]{Dial: dial, Size: 1, MaxIdleTime: -1}, []string{"MaxIdleTime is -1ns"}},
		{"negative health check", Options[*fakeConn]{Dial: dial, Size: 1, HealthCheckAfter: -time.Minute}, []string{"HealthCheckAfter is -1m0s"}},
		{"all problems at once", Options[*fakeConn]{Size: 0, MinIdle: -1, MaxIdleTime: -1},
			[]string{"Dial is nil", "Size is 0", "MinIdle is -1", "MaxIdleTime is -1ns"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.opts)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if err := p.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				return
			}
			if err == nil {
				p.Close()
				t.Fatal("New succeeded, want an error")
			}
			if p != nil {
				t.Errorf("New returned a pool with error %v", err)
			}
			if !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("errors.Is(%v, ErrInvalidOptions) = false", err)
			}
			if !strings.HasPrefix(err.Error(), "pool: invalid options: ") {
				t.Errorf("message %q lacks the package prefix", err)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestMaintainInterval(t *testing.T) {
	tests := []struct {
		maxIdle time.Duration
		want    time.Duration
	}{
		{0, time.Second},
		{time.Hour, time.Second},
		{time.Second, 500 * time.Millisecond},
		{4 * time.Second, time.Second},
		{time.Nanosecond, time.Millisecond},
	}
	for _, tt := range tests {
		o := Options[*fakeConn]{MaxIdleTime: tt.maxIdle}
		if got := o.maintainInterval(); got != tt.want {
			t.Errorf("MaxIdleTime %v: interval %v, want %v", tt.maxIdle, got, tt.want)
		}
	}
}
