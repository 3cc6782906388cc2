package main

// The MCP Tasks extension (io.modelcontextprotocol/tasks). elicit declares it on a
// 2026-07-28 session unless --no-tasks; a call the server turns into a task is followed
// here: polled every pollIntervalMs, each form it waits on shown as any other question,
// the answers sent with tasks/update, and the tool's result printed as a plain call's is.
// The ids of the tasks being followed are kept (pending), so that after Ctrl-C or a crash
// "elicit --url URL task resume ID" follows one again, and "task cancel ID" cancels it.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/tasks"
)

// follow follows task id until it ends, and prints its result as call does: exit 0 for a
// completed task whose tool did not report an error.
func (c *client) follow(ctx context.Context, cs *mcp.ClientSession, id string) int {
	kept := c.pending()
	kept.add(id)
	fmt.Fprintf(c.stderr, "%s made the call task %s; if elicit stops, go on with: elicit --url %s task resume %s\n",
		c.server, id, c.inv.url, id)
	for {
		var d *tasks.Detailed
		err := c.retrying(ctx, func() (err error) {
			d, err = tasks.Get(ctx, cs, id)
			return err
		})
		if err != nil {
			if c.timedOut(ctx) {
				return 1
			}
			c.fail("reading task %s: %v", id, err)
			return 1
		}
		switch d.Status {
		case "completed":
			kept.remove(id)
			if d.Result == nil {
				c.fail("task %s completed with no result", id)
				return 1
			}
			printResult(c.stdout, d.Result)
			if s, ok := c.answerer.(*script); d.Result.IsError || ok && s.misfits > 0 {
				return 1
			}
			return 0
		case "failed":
			kept.remove(id)
			if d.Error != nil {
				c.fail("task %s failed: %s (%d)", id, d.Error.Message, d.Error.Code)
			} else {
				c.fail("task %s failed", id)
			}
			return 1
		case "cancelled":
			kept.remove(id)
			c.fail("task %s was cancelled", id)
			return 1
		case "input_required":
			if err := c.answerTask(ctx, cs, id, d); err != nil {
				if c.timedOut(ctx) {
					return 1
				}
				c.fail("answering task %s: %v", id, err)
				return 1
			}
			continue
		}
		wait := time.Duration(max(d.PollIntervalMs, 100)) * time.Millisecond
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			c.timedOut(ctx)
			return 1
		}
	}
}

// answerTask shows the forms task id waits on, in key order, and sends the answers.
func (c *client) answerTask(ctx context.Context, cs *mcp.ClientSession, id string, d *tasks.Detailed) error {
	answers := map[string]any{}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range d.InputRequests {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		var wire struct {
			Method string           `json:"method"`
			Params mcp.ElicitParams `json:"params"`
		}
		if err := json.Unmarshal(d.InputRequests[k], &wire); err != nil || wire.Method != "elicitation/create" {
			fmt.Fprintf(c.stderr, "%s asked for %s, which elicit cannot answer; cancelling it\n", c.server, wire.Method)
			answers[k] = &mcp.ElicitResult{Action: "cancel"}
			continue
		}
		res, err := c.elicit(ctx, &mcp.ElicitRequest{Params: &wire.Params})
		if err != nil {
			return err
		}
		answers[k] = res
	}
	return c.retrying(ctx, func() error { return tasks.Update(ctx, cs, id, answers) })
}

// retrying runs op until it succeeds, fails for good (a JSON-RPC error saying the request
// itself is wrong: an unknown task, a missing capability, no such method), or ctx ends: a
// task may wait a day, and one dropped connection must not end the wait, nor lose answers
// the person gave.
func (c *client) retrying(ctx context.Context, op func() error) error {
	pause := time.Second
	told := false
	for {
		err := op()
		var je *jsonrpc.Error
		if err == nil || ctx.Err() != nil || errors.As(err, &je) && (je.Code == jsonrpc.CodeInvalidParams || je.Code == jsonrpc.CodeMethodNotFound || je.Code == mcp.CodeMissingRequiredClientCapabilities) {
			return err
		}
		if !told {
			fmt.Fprintf(c.stderr, "%s did not answer (%v); trying again\n", c.server, err)
			told = true
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return err
		}
		pause = min(2*pause, 30*time.Second)
	}
}

// taskCommand runs "task resume ID" or "task cancel ID".
func (c *client) taskCommand(ctx context.Context, cs *mcp.ClientSession) int {
	id := c.inv.taskID
	if c.inv.taskOp == "cancel" {
		if err := tasks.Cancel(ctx, cs, id); err != nil {
			c.fail("cancelling task %s: %v", id, err)
			return 1
		}
		c.pending().remove(id)
		fmt.Fprintf(c.stderr, "task %s is cancelled\n", id)
		return 0
	}
	return c.follow(ctx, cs, id)
}

// pendingTasks are the ids of the tasks elicit follows for one server: a file for each,
// named by a digest of the id and holding it, in a directory of the user's config directory
// (elicit/tasks/ and a digest of the URL). One file a task, written by a rename, so that
// elicits following tasks at once (one per terminal) never write over each other's. Without
// a config directory nothing is kept.
type pendingTasks struct{ dir string }

func (c *client) pending() *pendingTasks {
	config, err := os.UserConfigDir()
	if err != nil {
		return &pendingTasks{}
	}
	sum := sha256.Sum256([]byte(c.inv.url))
	return &pendingTasks{dir: filepath.Join(config, "elicit", "tasks", hex.EncodeToString(sum[:8]))}
}

// file is where task id is kept.
func (p *pendingTasks) file(id string) string {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(p.dir, hex.EncodeToString(sum[:16]))
}

func (p *pendingTasks) add(id string) {
	if p.dir == "" || os.MkdirAll(p.dir, 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(p.dir, ".new-*")
	if err != nil {
		return
	}
	_, err = tmp.WriteString(id)
	if err = errors.Join(err, tmp.Close()); err == nil {
		err = os.Rename(tmp.Name(), p.file(id))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
}

func (p *pendingTasks) remove(id string) {
	if p.dir != "" {
		_ = os.Remove(p.file(id))
	}
}

// validTaskID reports whether id could be a task's id: elicit sends it to the server only
// then.
func validTaskID(id string) bool {
	return id != "" && len(id) <= 256 && !strings.ContainsFunc(id, func(r rune) bool { return r < 0x21 || r > 0x7e })
}
