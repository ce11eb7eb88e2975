package api

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The text rules of string values and keys in a JSON body: what
// encoding/json would silently replace with U+FFFD, and NUL, which
// PostgreSQL cannot store.

// textFault says why a string token is not text the API accepts, or "".
// raw holds its literal as sent; s what encoding/json made of it.
func textFault(raw []byte, s string) string {
	switch {
	case !utf8.Valid(raw):
		return reasonNotUTF8
	case unpairedSurrogate(raw):
		return reasonSurrogate
	case strings.IndexByte(s, 0) >= 0:
		return reasonNULInValue
	}
	return ""
}

// unpairedSurrogate reports whether a JSON string literal has a \uXXXX
// escape of a UTF-16 surrogate that is not a high surrogate followed at
// once by an escaped low surrogate.
func unpairedSurrogate(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // the escaped character; a "\\" pair is skipped whole
		if i >= len(raw) || raw[i] != 'u' {
			continue
		}
		r := hex4(raw[i+1:])
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return true
		case r >= 0xd800 && r <= 0xdbff:
			next := raw[i+5:]
			if len(next) < 6 || next[0] != '\\' || next[1] != 'u' {
				return true
			}
			if lo := hex4(next[2:]); lo < 0xdc00 || lo > 0xdfff {
				return true
			}
			i += 10
		}
	}
	return false
}

// hex4 is the value of the four hex digits at the start of b, or -1. The
// JSON syntax was checked, so after \u there are always four.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	if err != nil {
		return -1
	}
	return int(n)
}
