package main

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadLineEdges(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	r := bufio.NewReaderSize(strings.NewReader("a\r\n\nb\n"+long+"\nc"), 16)
	want := []struct {
		line string
		over bool
	}{{"a", false}, {"", false}, {"b", false}, {long[:64<<10], true}, {"c", false}}
	for _, w := range want {
		line, over, err := readLine(r, 100<<10)
		require.NoError(t, err)
		assert.Equal(t, w.over, over)
		assert.Equal(t, len(w.line), len(line))
		assert.Equal(t, w.line, string(line))
	}
	_, _, err := readLine(r, 100<<10)
	assert.ErrorIs(t, err, io.EOF)
}

func TestLeadingID(t *testing.T) {
	id, isRequest := leadingID([]byte(`{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":"trunc`))
	assert.EqualValues(t, 7, id.Raw())
	assert.True(t, isRequest)
	id, isRequest = leadingID([]byte(`{"jsonrpc":"2.0","id":"s1","result":{"content":{"a":"trunc`))
	assert.Equal(t, "s1", id.Raw())
	assert.False(t, isRequest)
	id, _ = leadingID([]byte(`{"result":{"content":"trunc`))
	assert.False(t, id.IsValid(), "an id after the cut cannot be known")
	id, _ = leadingID([]byte(`not json`))
	assert.False(t, id.IsValid())
}

func TestDecodeFrame(t *testing.T) {
	for line, ok := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`:                  true,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`:    true,
		`{"jsonrpc":"2.0","id":1,"result":{}}`:                      true,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`: true,
		`{"jsonrpc":"2.0","id":1}`:                                  false,
		`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1}}`:   false,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`:                  false,
		`{"id":1,"method":"ping"}`:                                  false,
		`{"jsonrpc":"2.0","result":{}}`:                             false,
		`{"jsonrpc":"2.0","id":1,"result":null}`:                    true,
		`{"jsonrpc":"2.0","id":1,"error":null}`:                     false,
		`{"jsonrpc":"2.0","id":1,"result":null,"error":{"code":1}}`: false,
	} {
		_, err := decodeFrame([]byte(line))
		assert.Equal(t, ok, err == nil, line)
	}
}
