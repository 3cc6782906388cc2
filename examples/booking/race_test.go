//go:build race

package main

// raceBuild: the server under test is built with the race detector when the tests run with it.
var raceBuild = []string{"-race"}
