package registry_test

import (
	"context"
	"fmt"
	"time"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicitation/elicitationtest"
	"github.com/elicitd/elicitd/registry"
)

// A tool starts an elicitation, a prompter hands each prompt to the person, and the tool
// waits for the outcome. The first answer is blank, so the person is asked again with the
// problem listed first.
func Example() {
	reg := registry.New(registry.Config{MaxLive: 100})
	defer reg.Shutdown(context.Background())

	prompts := elicitationtest.NewPrompts(1)
	e, err := reg.Start("client-1", elicitation.Spec{
		Message: "What is your name?", Form: &elicitationtest.NameForm{}, Prompter: prompts, Timeout: time.Minute,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() {
		for _, name := range []string{"  ", "Ada"} {
			p := <-prompts
			fmt.Printf("prompt %d: %q\n", p.Round, p.Message)
			_ = e.Answer(elicitationtest.Accept(p.Round, name))
		}
	}()
	o, _ := e.Wait(context.Background())
	fmt.Println(o.State, o.Attempts, o.Data["name"], reg.Len())
	// Output:
	// prompt 1: "What is your name?"
	// prompt 2: "Name: is required\n\nWhat is your name?"
	// completed 2 Ada 0
}
