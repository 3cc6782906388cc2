package elicitation_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicitation/elicitationtest"
)

// One elicitation from start to outcome: the person first leaves the name blank, is asked
// again with the problem listed first, then answers.
func Example() {
	prompts := make(chan elicitation.Prompt, 1)
	e, err := elicitation.Start("demo", elicitation.Spec{
		Title: "name", Message: "Your name?", Form: &elicitationtest.NameForm{},
		Prompter: elicitation.PrompterFunc(func(p elicitation.Prompt) { prompts <- p }), // must not block
		Timeout:  time.Minute,
	}, elicitation.Env{Clock: clock.NewMock()})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{" ", "Ada"} {
		p := <-prompts
		fmt.Printf("prompt %d: %q\n", p.Round, p.Message)
		_ = e.Answer(elicitation.Answer{Round: p.Round, Action: elicitation.Accept, Content: map[string]any{"name": name}})
	}
	o, _ := e.Wait(context.Background())
	fmt.Println(o.State, o.Attempts, o.Data["name"])
	// Output:
	// prompt 1: "Your name?"
	// prompt 2: "Name: is required\n\nYour name?"
	// completed 2 Ada
}

// The deadline runs on the injected clock: moving a mock clock past it ends the question.
func ExampleElicitation_Extend() {
	clk := clock.NewMock()
	e, _ := elicitation.Start("demo", elicitation.Spec{Message: "Your name?", Form: &elicitationtest.NameForm{},
		Prompter: elicitation.PrompterFunc(func(elicitation.Prompt) {}), Timeout: time.Minute}, elicitation.Env{Clock: clk})
	deadline, _ := e.Extend(30 * time.Second)
	fmt.Println(deadline.Sub(clk.Now()))
	clk.Add(90 * time.Second)
	o, _ := e.Wait(context.Background())
	fmt.Println(o.State)
	// Output:
	// 1m30s
	// timeout
}
