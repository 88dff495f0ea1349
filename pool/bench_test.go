package pool

import (
	"context"
	"testing"
)

func BenchmarkGetPut(b *testing.B) {
	d := &fakeDialer{}
	p, err := New(Options[*fakeConn]{Dial: d.Dial, Size: 8})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, err := p.Get(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p.Put(c)
	}
}

func BenchmarkGetPutParallel(b *testing.B) {
	d := &fakeDialer{}
	p, err := New(Options[*fakeConn]{Dial: d.Dial, Size: 64})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c, err := p.Get(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			p.Put(c)
		}
	})
}

// BenchmarkGetPutContended has more goroutines than connections, so Gets wait.
func BenchmarkGetPutContended(b *testing.B) {
	d := &fakeDialer{}
	p, err := New(Options[*fakeConn]{Dial: d.Dial, Size: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c, err := p.Get(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			p.Put(c)
		}
	})
}
