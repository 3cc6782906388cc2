package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/webhook"
)

// webhookConfig is --webhook and its companions: where the end of every question is POSTed.
type webhookConfig struct {
	urls         []string
	answers      bool
	allowPrivate bool
	secret       string // ELICITD_WEBHOOK_SECRET
}

// settle checks the webhook settings together, once all are read: each URL against the
// outbound rules (--webhook-allow-private), and the secret that must sign them.
func (c *webhookConfig) settle(secret string) error {
	if len(c.urls) == 0 {
		if secret != "" || c.answers || c.allowPrivate {
			return errors.New("ELICITD_WEBHOOK_SECRET, --webhook-answers and --webhook-allow-private need --webhook")
		}
		return nil
	}
	for _, u := range c.urls {
		if _, err := webhook.ParseURL(u, c.allowPrivate); err != nil {
			return fmt.Errorf("--webhook: %w", err)
		}
	}
	if secret == "" {
		return fmt.Errorf("--webhook needs ELICITD_WEBHOOK_SECRET, the secret receivers verify the events with: a whsec_ value such as %s", webhook.NewSecret())
	}
	c.secret = secret
	return nil
}

// webhookStopWithin is how long deliveries under way, and the events still being added to
// the outbox in the background (each tried once more at once: webhook.Deliverer.Stop),
// may go on once elicitd is stopping: a delivery cut short is handed back to the outbox
// and sent again later, with the same id, and an event not added by then is lost, so the
// wait is short, and a signalled exit stays within its bound of 2 s (docs/settings.md).
const webhookStopWithin = time.Second

// boolean takes true or false (and 1/0, t/f, as strconv.ParseBool does).
func boolean(dst *bool) func(string) error {
	return func(s string) error {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("must be true or false, got %q", s)
		}
		*dst = b
		return nil
	}
}

// outboxer is a store that keeps a webhook outbox every node shares (natsstore.Store).
type outboxer interface {
	Outbox(ctx context.Context, o store.OutboxOptions) (store.Outbox, error)
}

// startWebhooks starts delivering the events of questions that end, when --webhook is set:
// through the store's outbox when it has one (every node shares it, and it outlives a
// restart), else through one in this process's memory. It returns nil without --webhook.
func startWebhooks(ctx context.Context, c webhookConfig, st store.Store, logger *slog.Logger) (*webhook.Deliverer, error) {
	if len(c.urls) == 0 {
		return nil, nil
	}
	var ob store.Outbox
	var err error
	if o, ok := st.(outboxer); ok {
		ob, err = o.Outbox(ctx, store.OutboxOptions{})
	} else {
		ob, err = memory.NewOutbox(memory.OutboxOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("webhook outbox: %w", err)
	}
	d, err := webhook.New(webhook.Options{URLs: c.urls, Secret: c.secret, Outbox: ob, AllowPrivate: c.allowPrivate,
		Answers: c.answers, Logger: logger})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// webhookOnEnd is ask.Options.OnEndErr for d: each question's end goes to the outbox, its
// tool call waiting at most 2 s for it (webhook.Deliverer.Queue). An end the outbox cannot
// take then (the store out: its NATS connection reconnecting, a quorum lost) is logged
// (ids only) and added in the background until the store is back, for up to a minute; the
// tool call returns meanwhile. Adding it again is harmless: the outbox keeps one entry by
// the event's id.
func webhookOnEnd(d *webhook.Deliverer, logger *slog.Logger) func(ask.Ending) error {
	return func(e ask.Ending) error {
		end := webhook.Ending{QuestionID: e.QuestionID, Key: e.Key, Tool: e.Tool, Template: e.Template, Owner: e.Owner,
			State: e.State.String(), Reason: e.Reason.String(), Attempts: e.Attempts, Created: e.Created, Ended: e.Ended,
			Answers: e.Answers, Sensitive: e.Sensitive}
		err := d.Queue(end)
		switch {
		case err == nil:
		case errors.Is(err, webhook.ErrQueuing):
			logger.Warn("the webhook event of a question that ended is not queued yet; it is added once the store is back, within five minutes",
				"id", e.QuestionID, "tool", e.Tool, "error", err.Error())
		default:
			logger.Warn("the webhook event of a question that ended could not be queued", "id", e.QuestionID, "tool", e.Tool, "error", err.Error())
		}
		return err // not kept yet: a stopping node leaves a push-era end in its roster
	}
}

// webhookStats are the deliveries' counts, for the stats resource.
func webhookStats(d *webhook.Deliverer) func() any {
	return func() any {
		s := d.Stats()
		return map[string]uint64{"delivered": s.Delivered, "retries": s.Retries, "failures": s.Failures, "lost": s.Lost}
	}
}
