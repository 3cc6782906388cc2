//go:build !race

package main

// raceBuild is how the binaries under test are built (see race_test.go).
var raceBuild []string
