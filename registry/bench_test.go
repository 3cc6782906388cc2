package registry_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/registry"
	"github.com/elicitd/elicitd/validator"
)

var pendingCount = flag.Int("pending", 100_000, "elicitations BenchmarkPendingMemory holds at once")

// passForm accepts any answer with a non-empty "name" and keeps the content as is, so the
// benchmarks measure the engine rather than a form.
type passForm struct{}

func (passForm) WireSchema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }

func (passForm) Validate(c map[string]any) (map[string]any, []validator.FieldError) {
	if s, _ := c["name"].(string); s == "" {
		return nil, []validator.FieldError{{Field: "name", Message: "Name: is required"}}
	}
	return c, nil
}

// nopPrompter drops prompts: the benchmark knows every elicitation is at round 1.
type nopPrompter struct{}

func (nopPrompter) Prompt(elicitation.Prompt) {}

// One elicitation's whole life through the registry: start, first prompt, valid answer,
// completed, removed.
func BenchmarkLifecycle(b *testing.B) {
	reg := registry.New(registry.Config{MaxLive: 1 << 20})
	defer func() { _ = reg.Shutdown(context.Background()) }()
	var owners atomic.Int64
	content := map[string]any{"name": "Ada"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		owner := fmt.Sprintf("owner-%d", owners.Add(1))
		prompts := make(chan elicitation.Prompt, 1)
		spec := elicitation.Spec{Message: "Your name?", Form: passForm{}, Prompter: elicitation.PrompterFunc(func(p elicitation.Prompt) { prompts <- p }), Timeout: time.Minute}
		for pb.Next() {
			e, err := reg.Start(owner, spec)
			if err != nil {
				b.Fatal(err)
			}
			p := <-prompts
			if err := e.Answer(elicitation.Answer{Round: p.Round, Action: elicitation.Accept, Content: content}); err != nil {
				b.Fatal(err)
			}
			<-e.Done()
		}
	})
	if n := reg.Len(); n != 0 {
		b.Fatalf("%d elicitations left live", n)
	}
}

// The physical floor: a bare goroutine with a timer, answering one value over two channels.
func BenchmarkBareActor(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			in, out := make(chan int), make(chan int)
			timer := time.NewTimer(time.Minute)
			go func() {
				select {
				case v := <-in:
					out <- v
				case <-timer.C:
				}
				timer.Stop()
			}()
			in <- 1
			<-out
		}
	})
}

// Holds -pending elicitations live at once (100,000 by default) and reports the heap and
// stack they take, per elicitation.
func BenchmarkPendingMemory(b *testing.B) {
	n := *pendingCount
	for range b.N {
		reg := registry.New(registry.Config{})
		spec := elicitation.Spec{Message: "Your name?", Form: passForm{}, Prompter: nopPrompter{}, Timeout: time.Hour}
		before := liveBytes()
		all := make([]*elicitation.Elicitation, n)
		for i := range all {
			e, err := reg.Start(fmt.Sprintf("owner-%d", i%1000), spec)
			if err != nil {
				b.Fatal(err)
			}
			all[i] = e
		}
		after := liveBytes()
		if reg.Len() != n {
			b.Fatalf("%d live, want %d", reg.Len(), n)
		}
		b.ReportMetric(float64(after-before)/float64(n), "bytes/elicitation")
		b.ReportMetric(float64(after-before)/(1<<20), "MiB-total")
		if err := reg.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		runtime.KeepAlive(all)
	}
}

// liveBytes is the heap in use plus the goroutine stacks, after a full collection.
func liveBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc + ms.StackInuse
}

// 10,000 live elicitations answered from 16 goroutines; reports completions per second of the
// answering phase.
func BenchmarkAnswer10kFrom16(b *testing.B) {
	const live, answerers = 10_000, 16
	var answered time.Duration
	for range b.N {
		b.StopTimer()
		reg := registry.New(registry.Config{})
		prompts := make(chan elicitation.Prompt, live)
		spec := elicitation.Spec{Message: "Your name?", Form: passForm{}, Prompter: elicitation.PrompterFunc(func(p elicitation.Prompt) { prompts <- p }), Timeout: time.Hour}
		for i := range live {
			if _, err := reg.Start(fmt.Sprintf("owner-%d", i%100), spec); err != nil {
				b.Fatal(err)
			}
		}
		queue := make(chan elicitation.Prompt, live)
		for range live {
			queue <- <-prompts
		}
		close(queue)
		b.StartTimer()
		begin := time.Now()
		var g errgroup.Group
		for range answerers {
			g.Go(func() error {
				for p := range queue {
					e := p.Elicitation
					if err := e.Answer(elicitation.Answer{Round: p.Round, Action: elicitation.Accept, Content: map[string]any{"name": "Ada"}}); err != nil {
						return err
					}
					<-e.Done()
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		answered += time.Since(begin)
		b.StopTimer()
		if reg.Len() != 0 {
			b.Fatalf("%d left live", reg.Len())
		}
		_ = reg.Shutdown(context.Background())
		b.StartTimer()
	}
	b.ReportMetric(float64(live*b.N)/answered.Seconds(), "completions/s")
}
