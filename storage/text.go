package storage

import (
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// trimText removes what carries nothing at the ends of a name or an
// identifier: Unicode whitespace, control characters and the zero-width
// characters (U+200B..U+200D, U+2060, U+FEFF). Inside the text they stay:
// a zero-width joiner or non-joiner there is part of the writing (emoji
// sequences, Persian). Other format characters (bidi marks, emoji tags) are
// kept even at the ends, where they change how the text is shown.
func trimText(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.Is(unicode.Cc, r) || zeroWidth(r)
	})
}

func zeroWidth(r rune) bool {
	return r >= '\u200b' && r <= '\u200d' || r == '\u2060' || r == '\ufeff'
}

// assignIDForm is the stored form of an identifier compared for
// uniqueness: trimmed, in Unicode NFC, upper-cased. NFC comes first so
// that a composed "É" and a decomposed "E\u0301" are one identifier; it is
// applied again after upper-casing, whose per-character mapping can leave
// a sequence that NFC composes ("ı\u0301" upper-cases to "I\u0301", which
// is "Í").
func assignIDForm(s string) string {
	return norm.NFC.String(strings.ToUpper(norm.NFC.String(trimText(s))))
}

// visible reports whether s has at least one character that shows: one
// that is not whitespace, a control or format character (Cc, Cf), a
// combining mark on its own (M), or a filler that renders as blank (the
// Hangul fillers, the blank Braille pattern).
func visible(s string) bool {
	for _, r := range s {
		if !invisible(r) {
			return true
		}
	}
	return false
}

func invisible(r rune) bool {
	tables, fillers := InvisibleText()
	return unicode.In(r, tables...) || slices.Contains(fillers, r)
}

// InvisibleText declares the characters that do not show (visible's
// complement): whitespace, control and format characters (Cc, Cf), the
// separators (Z), combining marks (M), and the fillers that render as
// blank (the Hangul fillers, the blank Braille pattern). The OpenAPI
// document's pattern of a name that must show a character is made from
// it (api, issue 34).
func InvisibleText() (tables []*unicode.RangeTable, fillers []rune) {
	return []*unicode.RangeTable{unicode.White_Space, unicode.Z, unicode.Cc, unicode.Cf, unicode.M},
		[]rune{'\u115f', '\u1160', '\u3164', '\uffa0', '\u2800'}
}
