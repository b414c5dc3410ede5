package kernel

// nestingDepth scans CUE source and returns the deepest nesting of braces,
// brackets, parentheses and string interpolations in it, stopping as soon
// as the depth passes limit (it then returns limit+1). Nesting inside strings
// and comments does not count; an interpolation counts as a level, and
// what nests inside it counts too. The scan visits each byte at most once
// and holds at most limit+1 levels, so its cost is linear in len(src) and
// its memory bounded by limit, whatever the input. Malformed input is
// scanned as best it can be: the parser reports it.
//
// steps counts the iterations of its loops, for the tests to see the work
// done: never more than twice len(src).
func nestingDepth(src []byte, limit int) (depth, steps int) {
	// A frame is one open level: a bracket, an interpolation, or a string
	// (which is not a level of its own).
	type frame struct {
		kind   byte // '{', '[' or '(' for brackets, '\\' for an interpolation, '"' or '\'' for a string
		multi  bool // a string's quotes are tripled
		hashes int  // a string's # count
	}
	var stack []frame
	levels, deepest := 0, 0
	push := func(f frame) bool {
		stack = append(stack, f)
		if f.kind != '"' && f.kind != '\'' {
			levels++
			deepest = max(deepest, levels)
		}
		return levels <= limit
	}
	pop := func() {
		if f := stack[len(stack)-1]; f.kind != '"' && f.kind != '\'' {
			levels--
		}
		stack = stack[:len(stack)-1]
	}
	// hashesAt reports whether src[i:] starts with n '#'.
	hashesAt := func(i, n int) bool {
		if i+n > len(src) {
			return false
		}
		for _, c := range src[i : i+n] {
			if c != '#' {
				return false
			}
		}
		return true
	}
	// openString opens the string whose quote is at src[i], after n '#',
	// and returns the index after its opening quotes.
	openString := func(i, n int) (int, bool) {
		q := src[i]
		multi := i+2 < len(src) && src[i+1] == q && src[i+2] == q
		ok := push(frame{kind: q, multi: multi, hashes: n})
		if multi {
			return i + 3, ok
		}
		return i + 1, ok
	}

	i := 0
	for i < len(src) {
		steps++
		c := src[i]
		if n := len(stack); n > 0 && (stack[n-1].kind == '"' || stack[n-1].kind == '\'') {
			s := stack[n-1]
			switch {
			case c == '\\' && hashesAt(i+1, s.hashes):
				j := i + 1 + s.hashes
				if j < len(src) && src[j] == '(' {
					if !push(frame{kind: '\\'}) {
						return deepest, steps
					}
					i = j + 1
				} else {
					i = j + 1 // the escaped character, whatever it is
				}
				continue
			case c == s.kind:
				end := i + 1
				if s.multi {
					end = i + 3
					if end > len(src) || src[i+1] != c || src[i+2] != c {
						i++
						continue
					}
				}
				if hashesAt(end, s.hashes) {
					pop()
					i = end + s.hashes
					continue
				}
			}
			i++
			continue
		}
		switch c {
		case '/':
			if i+1 < len(src) && src[i+1] == '/' {
				for i < len(src) && src[i] != '\n' {
					i++
					steps++
				}
				continue
			}
		case '{', '[', '(':
			if !push(frame{kind: c}) {
				return deepest, steps
			}
		case '}', ']', ')':
			if n := len(stack); n > 0 && (stack[n-1].kind != '\\' || c == ')') {
				pop()
			}
		case '"', '\'':
			var ok bool
			if i, ok = openString(i, 0); !ok {
				return deepest, steps
			}
			continue
		case '#':
			j := i
			for j < len(src) && src[j] == '#' {
				j++
				steps++
			}
			if j < len(src) && (src[j] == '"' || src[j] == '\'') {
				var ok bool
				if i, ok = openString(j, j-i); !ok {
					return deepest, steps
				}
				continue
			}
			i = j
			continue
		}
		i++
	}
	return deepest, steps
}
