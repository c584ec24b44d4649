package mcpclient

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/monty-go/monty/session/tools"
)

// ErrUnknownTool matches the errors of Add for a name in Server.Allow,
// Server.Deny or Server.Approve that is no tool of the server, neither
// its MCP name nor its Python name. Such an error is an
// *UnknownToolError, and matches ErrServer too.
var ErrUnknownTool = errors.New("mcpclient: no such tool")

// UnknownToolError is a name in Server.Allow, Server.Deny or
// Server.Approve that is neither the MCP name nor the Python name of a
// tool the server lists. Add refuses the server with it (joined with
// errors.Join when there are several): a filter or an approval gate that
// names no tool would silently do nothing. It matches ErrUnknownTool and
// ErrServer. A value is not modified after Add returns it, and so is safe
// for concurrent use.
type UnknownToolError struct {
	// Server is the server's Name.
	Server string
	// List is the field naming the tool: "Allow", "Deny" or "Approve".
	List string
	// Name is the name as the list gives it.
	Name string
	// Suggestions are the tools Name could have meant, closest first,
	// by MCP name: those whose MCP or Python name is a few edits from
	// it, or the same once case and punctuation are ignored. It is
	// empty when none is that close.
	Suggestions []string
	// Tools are the MCP names of all the server's tools, sorted.
	Tools []string
}

// Error says which name of which list is no tool of which server, and
// what it could have meant.
func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("%s %s: %s: %s", ErrServer, e.Server, e.List, e.Reason())
}

// Reason is the error's message without the server and the list: that
// the server has no such tool, and the tools it could have meant (or the
// server's tools, when none is close).
func (e *UnknownToolError) Reason() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the MCP server %s has no tool %q", e.Server, clip(e.Name, maxShownName))
	switch {
	case len(e.Suggestions) > 0:
		b.WriteString("; did you mean ")
		b.WriteString(toolList(e.Suggestions, len(e.Suggestions)))
		b.WriteString("?")
	case len(e.Tools) == 0:
		b.WriteString("; it lists no tools")
	default:
		b.WriteString("; its tools are ")
		b.WriteString(toolList(e.Tools, maxListedTools))
	}
	b.WriteString(" (name a tool by its MCP name or its Python name)")
	return b.String()
}

// Is reports whether target is ErrUnknownTool or ErrServer.
func (e *UnknownToolError) Is(target error) bool {
	return target == ErrUnknownTool || target == ErrServer
}

// How much of a name and of the tools an UnknownToolError shows, and the
// longest name whose edit distance to the tools' names is computed.
const (
	maxShownName   = 80
	maxListedTools = 20
	maxSuggestions = 5
	maxComparedLen = 200
)

// toolList lists the tools named (by MCP name), at most most of them, each
// by its Python name and, when it differs, its MCP name.
func toolList(names []string, most int) string {
	shown := make([]string, 0, min(len(names), most)+1)
	for _, name := range names[:min(len(names), most)] {
		py := tools.PythonName(name)
		if py == name {
			shown = append(shown, name)
		} else {
			shown = append(shown, fmt.Sprintf("%s (MCP name %s)", py, name))
		}
	}
	if len(names) > most {
		shown = append(shown, fmt.Sprintf("and %d more", len(names)-most))
	}
	return strings.Join(shown, ", ")
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// names reports whether name names the tool called tool: it is the tool's
// MCP name or its Python name.
func names(name, tool string) bool {
	return name == tool || name == tools.PythonName(tool)
}

// namesAny reports whether a name of list names the tool called tool.
func namesAny(list []string, tool string) bool {
	return slices.ContainsFunc(list, func(name string) bool { return names(name, tool) })
}

// unknownNames are the names of the server's Allow, Deny and Approve
// lists that name none of defs, the tools the server lists, with what
// they could have meant; nil when every name is a tool.
func (ns *Namespace) unknownNames(defs []*mcp.Tool) []*UnknownToolError {
	var all []string
	for _, def := range defs {
		all = append(all, def.Name)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	var unknown []*UnknownToolError
	for _, list := range []struct {
		field string
		names []string
	}{{"Allow", ns.srv.Allow}, {"Deny", ns.srv.Deny}, {"Approve", ns.srv.Approve}} {
		for _, name := range list.names {
			if slices.ContainsFunc(all, func(tool string) bool { return names(name, tool) }) {
				continue
			}
			unknown = append(unknown, &UnknownToolError{Server: ns.srv.Name, List: list.field, Name: name, Suggestions: suggest(name, all), Tools: all})
		}
	}
	return unknown
}

// suggest returns the tools of all (MCP names, sorted) that name, no tool's
// name, could have meant, closest first: those whose MCP or Python name is
// the same once case and punctuation are ignored, or within a few edits
// of it (a third of its length, at least 2), at most maxSuggestions.
func suggest(name string, all []string) []string {
	if utf8.RuneCountInString(name) > maxComparedLen {
		return nil
	}
	type scored struct {
		tool     string
		distance int
	}
	limit := max(2, utf8.RuneCountInString(name)/3)
	var near []scored
	for _, tool := range all {
		if d := distance(name, tool); d <= limit {
			near = append(near, scored{tool, d})
		}
	}
	slices.SortStableFunc(near, func(a, b scored) int { return cmp.Compare(a.distance, b.distance) })
	out := make([]string, 0, min(len(near), maxSuggestions))
	for _, s := range near[:min(len(near), maxSuggestions)] {
		out = append(out, s.tool)
	}
	return out
}

// distance is how far name is from the tool called tool: 0 when their
// normal forms (normal) are the same, else the edit distance, ignoring
// case, from the nearer of the tool's MCP and Python names.
func distance(name, tool string) int {
	if normal(name) != "" && normal(name) == normal(tool) {
		return 0
	}
	if utf8.RuneCountInString(tool) > maxComparedLen {
		return maxComparedLen
	}
	lower := strings.ToLower(name)
	return min(editDistance(lower, strings.ToLower(tool)), editDistance(lower, strings.ToLower(tools.PythonName(tool))))
}

// normal is s in lower case without anything but letters and digits:
// get-sum, get_sum and GetSum are all getsum.
func normal(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
