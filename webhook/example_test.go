package webhook_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"time"

	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/webhook"
)

// A deliverer sends each question's end to a receiver that verifies it with the snippet
// of docs/webhooks.md. Send returns at once; the event goes out on the deliverer's own
// goroutines.
func Example() {
	secret := webhook.NewSecret() // kept, and given to the receiver
	got := make(chan string, 1)
	h, err := webhookHandler(secret, func(id string, event map[string]any) {
		got <- fmt.Sprintf("%s: %s, outcome %s", id, event["type"], event["outcome"])
	})
	if err != nil {
		log.Fatal(err)
	}
	receiver := httptest.NewServer(h)
	defer receiver.Close()

	outbox, err := memory.NewOutbox(memory.OutboxOptions{})
	if err != nil {
		log.Fatal(err)
	}
	d, err := webhook.New(webhook.Options{
		URLs:         []string{receiver.URL + "/hooks/elicitd"},
		Secret:       secret,
		Outbox:       outbox,
		AllowPrivate: true, // the receiver is on loopback
	})
	if err != nil {
		log.Fatal(err)
	}
	ended := time.Now()
	err = d.Send(context.Background(), webhook.Ending{QuestionID: "Q7KX", Tool: "ask_user", Owner: "o-1",
		State: "cancelled", Reason: "declined", Attempts: 1, Created: ended.Add(-time.Minute), Ended: ended})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-got)
	if err := d.Stop(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%+v\n", d.Stats())
	// Output:
	// evt_Q7KX_ended: elicitation.ended, outcome declined
	// {Delivered:1 Retries:0 Failures:0 Lost:0}
}
