// Package validator turns form definitions into the MCP wire schema and checks the answers a
// person gives against them, after normalising those answers.
//
// Every problem with an answer is reported as a [FieldError]: the field it concerns, the
// constraint it breaks, and a message written for the person who typed it.
package validator
