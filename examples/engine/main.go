// Command engine walks one elicitation through its life without any MCP client: a scripted
// person first answers with a typo, is asked again with the error listed first, then answers
// properly, and the outcome is printed. It shows the actor, the registry and the prompter
// contract that the MCP adapter builds on.
//
//	go run ./examples/engine
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/registry"
	"github.com/elicitd/elicitd/validator"
)

// weightForm asks for a package weight in kilograms, a positive number.
type weightForm struct{}

func (weightForm) WireSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"weight_kg":{"type":"number","title":"Package weight (kg)"}},"required":["weight_kg"]}`)
}

func (weightForm) Validate(content map[string]any) (map[string]any, []validator.FieldError) {
	var w float64
	switch v := content["weight_kg"].(type) {
	case float64:
		w = v
	case string:
		parsed, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			w = -1
		} else {
			w = parsed
		}
	default:
		w = -1
	}
	if !(w > 0) {
		return nil, []validator.FieldError{{Field: "weight_kg", Label: "Package weight (kg)", Constraint: "minimum",
			Message: "Package weight (kg): must be a positive, finite number"}}
	}
	return map[string]any{"weight_kg": w}, nil
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "engine:", err)
		os.Exit(1)
	}
}

// intro is the first thing the walk-through prints: what it is about to show.
const intro = `engine: one elicitation walked through by elicitd's engine, with no MCP client: a
scripted person answers with a typo, is asked again with the error first, then answers properly.
`

// run walks the elicitation through, printing to w.
func run(w io.Writer) error {
	fmt.Fprint(w, intro)
	reg := registry.New(registry.Config{MaxLive: 10})
	answers := []map[string]any{{"weight_kg": "abc"}, {"weight_kg": " 5 "}}

	person := make(chan elicitation.Prompt, 1)
	e, err := reg.Start("demo-client", elicitation.Spec{
		Title: "package weight", Tool: "example", Message: "How heavy is the package?",
		Form: weightForm{}, Prompter: elicitation.PrompterFunc(func(p elicitation.Prompt) { person <- p }),
		Timeout: time.Minute,
	})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		for p := range person {
			fmt.Fprintf(w, "attempt %d of %d: %q\n", p.Attempt, p.MaxAttempts, p.Message)
			a := answers[p.Round-1]
			fmt.Fprintf(w, "  the person types %v\n", a["weight_kg"])
			_ = p.Elicitation.Answer(elicitation.Answer{Round: p.Round, Action: elicitation.Accept, Content: a})
		}
	}()

	o, _ := e.Wait(context.Background())
	close(person)
	<-answered
	fmt.Fprintf(w, "outcome: %s after %d attempts, data %v\n", o.State, o.Attempts, o.Data)
	fmt.Fprintf(w, "live elicitations left: %d\n", reg.Len())
	if err := reg.Shutdown(context.Background()); err != nil {
		return err
	}
	if o.State != elicitation.Completed {
		return fmt.Errorf("the elicitation ended %s", o.State)
	}
	return nil
}
