package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

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

// sdkDecodeFrame is decodeFrame as it was: the SDK's decoder, then the shape of a response.
func sdkDecodeFrame(line []byte) (jsonrpc.Message, error) {
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, err
	}
	if r, ok := msg.(*jsonrpc.Response); ok && (len(r.Result) > 0) == (r.Error != nil) {
		return nil, errors.New("a response needs exactly one of result and error")
	}
	return msg, nil
}

// frameCorpus is lines that reach decodeFrame (valid JSON objects), on the edges of what
// the SDK's decoder accepts.
var frameCorpus = []string{
	`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"x","arguments":{"a":[1,2,{"b":null}]}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","method":"n","params":null}`,
	`{"jsonrpc":"2.0","id":null,"method":"n"}`,
	`{"jsonrpc":"2.0","id":1,"method":""}`,
	`{"jsonrpc":"2.0","id":1,"method":null}`,
	`{"jsonrpc":"2.0","id":1,"method":7}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1e3,"method":"x"}`,
	`{"jsonrpc":"2.0","id":-4,"method":"x"}`,
	`{"jsonrpc":"2.0","id":true,"method":"x"}`,
	`{"jsonrpc":"2.0","id":{},"method":"x"}`,
	`{"jsonrpc":"2.0","id":[1],"result":{}}`,
	`{"jsonrpc":"2.0","id":"","result":{}}`,
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"result":null}`,
	`{"jsonrpc":"2.0","id":1,"result":[]}`,
	`{"jsonrpc":"2.0","id":1,"result":"s"}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x","data":{"k":[1]}}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x","data":null}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"Code":1,"Message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"error":{}}`,
	`{"jsonrpc":"2.0","id":1,"error":"x"}`,
	`{"jsonrpc":"2.0","id":1,"error":[]}`,
	`{"jsonrpc":"2.0","id":1,"error":null}`,
	`{"jsonrpc":"2.0","id":1}`,
	`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1}}`,
	`{"jsonrpc":"2.0","id":1,"result":null,"error":{"code":1}}`,
	`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
	`{"jsonrpc":2.0,"id":1,"method":"ping"}`,
	`{"jsonrpc":null,"id":1,"method":"ping"}`,
	`{"id":1,"method":"ping"}`,
	`{"JSONRPC":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","ID":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"Method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","Params":{}}`,
	`{"jsonrpc":"2.0","id":1,"Result":{}}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"a"}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"a\"}{[\\"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","extra":{"x":1}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat(`[`, 999) + strings.Repeat(`]`, 999) + `}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat(`[`, 1000) + strings.Repeat(`]`, 1000) + `}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":"` + strings.Repeat(`[`, 2000) + `"}`,
	`{"jsonrpc":"2.0","id":1,"result":{"s":"\u00e9\n"}}`,
	// What decodeFrame reads itself: white space around members, escaped keys and values,
	// members of every kind of value before and after the ones it reads.
	" { \"jsonrpc\" : \"2.0\" ,\t\"id\"\n:\r7 , \"method\" : \"ping\" , \"params\" : [ 1 , { } ] } ",
	`{"j\u0073onrpc":"2.0","\u0069d":1,"meth\u006fd":"p\u0069ng"}`,
	`{"jsonrpc":"2\u002e0","id":1,"method":"a\"b"}`,
	`{"jsonrpc":"2.0","id":"\u00e9","method":"\ud83d\ude00"}`,
	`{"jsonrpc":"2.0","a":true,"b":false,"c":null,"d":-1.5e+3,"e":"}","f":[{"]":"["}],"id":1,"result":0}`,
	`{"jsonrpc":"2.0","id":1,"result":{},"result":null,"error":{"code":1,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"},"error":null,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"k":"v"},"params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","Method":"y","METHOD":"z"}`,
}

// decodeFrame accepts and refuses what the SDK's decoder does, and decodes to the same
// message.
func TestDecodeFrameIsTheSDKsDecoder(t *testing.T) {
	for _, line := range frameCorpus {
		sameAsSDK(t, line)
	}
}

func FuzzDecodeFrame(f *testing.F) {
	for _, line := range frameCorpus {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		b := bytes.TrimSpace([]byte(line))
		if len(b) == 0 || b[0] != '{' || !utf8.Valid(b) || !json.Valid(b) {
			return // answered before decodeFrame
		}
		sameAsSDK(t, line)
	})
}

func sameAsSDK(t *testing.T, line string) {
	t.Helper()
	want, wantErr := sdkDecodeFrame([]byte(line))
	got, err := decodeFrame([]byte(line))
	short := line[:min(len(line), 120)]
	if !assert.Equal(t, wantErr == nil, err == nil, "%s: sdk error %v, ours %v", short, wantErr, err) || err != nil {
		return
	}
	assert.Equal(t, want, got, short)
}
