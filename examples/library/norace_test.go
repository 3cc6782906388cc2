//go:build !race

package main

var raceBuild []string
