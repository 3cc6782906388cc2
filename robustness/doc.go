// Package robustness holds the cluster robustness suite, after etcd's: elicitd binaries on
// a three-server NATS cluster (routes, R3), real go-sdk clients over Streamable HTTP, and
// faults injected while they run (processes killed, stopped, frozen; NATS servers lost;
// the network between a node and NATS blackholed, slowed or reset through toxiproxy).
// Every request and what it got back is recorded, and a checker judges the history
// afterwards: porcupine for linearizability against a model of one question, and plain
// invariants (every question whose client keeps resending completes, with exactly the
// answers sent).
//
// The package has no code of its own outside its tests. A short profile runs with
// go test ./...; a long one with
//
//	go test -race -run TestRobustness ./robustness -robustness.duration=10m -timeout 30m
//
// Two of the clients (-robustness.task-clients=N for N) run their questions as MCP tasks
// (tasks_test.go): created, polled and answered through tasks/get and tasks/update on any
// node, judged as the others are.
//
// See docs/cluster.md for what it measured.
package robustness
