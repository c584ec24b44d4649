package cli

import (
	"errors"
	"fmt"
	"strings"
)

// splitCommand splits a command line into words as a POSIX shell does,
// expanding nothing:
//
//   - blanks (spaces, tabs, and newlines, where a shell would end the
//     command) separate words;
//   - 'single quotes' keep every character as it is;
//   - "double quotes" keep every character but a backslash before $, `,
//     ", \ or a newline, which keeps that character;
//   - outside quotes a backslash keeps the next character;
//   - a backslash before a newline joins the lines (both go);
//   - quotes join the word around them: a'b'"c" is abc, and a pair of
//     quotes with nothing between them is an empty word.
//
// What a shell would expand or interpret instead of passing on is refused
// with an error that says how to write it: $ and ` outside single quotes
// (parameters, commands), an unquoted ~ or # starting a word (the home
// directory, a comment), and the unquoted operators | & ; < > ( ). Glob
// characters (* ? [) are passed on as they are. An unclosed quote, a
// trailing backslash and a line with no word are errors too.
func splitCommand(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false // w holds a word, possibly empty ('')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\\':
			if i+1 == len(s) {
				return nil, errors.New(`it ends with a backslash, which escapes nothing: remove it, or write \\ for a backslash`)
			}
			i++
			if s[i] != '\n' {
				w.WriteByte(s[i])
				inWord = true
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf(`the ' at byte %d is never closed: close it, or write \' for a quote`, i+1)
			}
			w.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			open := i
			inWord = true
			for i++; ; i++ {
				if i == len(s) {
					return nil, fmt.Errorf(`the " at byte %d is never closed: close it, or write \" for a quote`, open+1)
				}
				c := s[i]
				if c == '"' {
					break
				}
				if c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
					if s[i] != '\n' {
						w.WriteByte(s[i])
					}
					continue
				}
				if c == '$' || c == '`' {
					return nil, notExpanded(c)
				}
				w.WriteByte(c)
			}
		case c == '$' || c == '`':
			return nil, notExpanded(c)
		case strings.IndexByte("|&;<>()", c) >= 0:
			return nil, fmt.Errorf("%c is a shell operator, and no shell runs the command: quote it ('%c') to pass it as an argument, or run the command through sh -c '…'", c, c)
		case !inWord && c == '~':
			return nil, errors.New("~ is not expanded to the home directory: write the directory's path, or quote it ('~') to pass a ~")
		case !inWord && c == '#':
			return nil, errors.New("# would start a comment in a shell: remove what follows it, or quote it ('#') to pass a #")
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	if len(words) == 0 {
		return nil, errors.New("there is no command")
	}
	return words, nil
}

// notExpanded is the error for c, a $ or ` that a shell would expand.
func notExpanded(c byte) error {
	what := "a variable or a command's output"
	if c == '`' {
		what = "a command's output"
	}
	return fmt.Errorf("%c would be replaced by %s in a shell, and nothing is expanded here: write the value itself, or pass a %c in single quotes ('%c') or as \\%c", c, what, c, c, c)
}
