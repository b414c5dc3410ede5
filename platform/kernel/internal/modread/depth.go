package modread

// Depth scans CUE (or JSON) source and returns the deepest nesting
// in it, stopping as soon as the depth passes limit (it then returns
// limit+1). A level is what the parser nests a value in: each label of a
// field (a: b: c: 1 nests three levels), each brace, bracket or
// parenthesis, save one that opens a field's value, whose label counted
// for it (a: {b: [1]} nests two levels, as a: b: 1 does), each string
// interpolation, and each arithmetic, comparison or logical operator of a
// field's expression (a: 1 + 2 + 3 nests three levels); not the
// unification and disjunction operators & and |, which the evaluator
// flattens. A field ends where the parser ends it: at a comma, or at a
// newline after a token that ends an operand. Nesting inside strings and
// comments does not count.
//
// The scan visits each byte at most twice and holds at most limit+1
// levels, so its cost is linear in len(src) and its memory bounded by
// limit, whatever the input. Malformed input is scanned as best it can
// be: the parser reports it.
//
// steps counts the iterations of its loops, for the tests to see the work
// done: never more than twice len(src).
func Depth(src []byte, limit int) (depth, steps int) {
	// A frame is one open bracket, interpolation or string, or the file.
	type frame struct {
		kind   byte // '{', '[' or '(' for brackets, '\\' for an interpolation, '"' or '\'' for a string, 0 for the file
		free   bool // a bracket that opens a field's value: the field's label counted for it
		chain  int  // the labels of the field being scanned in this frame
		multi  bool // a string's quotes are tripled
		hashes int  // a string's # count
	}
	isString := func(f frame) bool { return f.kind == '"' || f.kind == '\'' }
	stack := []frame{{}}
	levels, deepest := 0, 0
	afterColon := false // the last token was a field's colon
	// operand: the last token ends an operand, so that a newline ends the
	// field, as the parser inserts a comma there.
	operand := false
	deeper := func(n int) bool {
		levels += n
		deepest = max(deepest, levels)
		return levels <= limit
	}
	push := func(f frame) bool {
		f.free = afterColon && !isString(f) && f.kind != '\\'
		stack = append(stack, f)
		if isString(f) || f.free {
			return true
		}
		return deeper(1)
	}
	// endField ends the field being scanned in the innermost frame.
	endField := func() {
		top := &stack[len(stack)-1]
		levels -= top.chain
		top.chain = 0
	}
	pop := func() {
		endField()
		if f := stack[len(stack)-1]; !isString(f) && !f.free {
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
		if s := stack[len(stack)-1]; isString(s) {
			switch {
			case c == '\\' && hashesAt(i+1, s.hashes):
				j := i + 1 + s.hashes
				if j < len(src) && src[j] == '(' {
					if !push(frame{kind: '\\'}) {
						return deepest, steps
					}
					operand = false
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
					operand = true
					continue
				}
			}
			i++
			continue
		}
		if c == ' ' || c == '\t' || c == '\r' {
			i++
			continue
		}
		wasAfterColon, wasOperand := afterColon, operand
		afterColon, operand = false, false
		if n := operatorAt(src, i); n > 0 {
			stack[len(stack)-1].chain++
			if !deeper(1) {
				return deepest, steps
			}
			i += n
			continue
		}
		switch c {
		case '/':
			if i+1 < len(src) && src[i+1] == '/' {
				for i < len(src) && src[i] != '\n' {
					i++
					steps++
				}
				afterColon, operand = wasAfterColon, wasOperand
				continue
			}
		case ':':
			stack[len(stack)-1].chain++
			if !deeper(1) {
				return deepest, steps
			}
			afterColon = true
		case ',':
			endField()
		case '\n':
			if wasOperand {
				endField()
			} else {
				afterColon = wasAfterColon
			}
		case '{', '[', '(':
			afterColon = wasAfterColon
			if !push(frame{kind: c}) {
				return deepest, steps
			}
			afterColon = false
		case '}', ']', ')':
			if n := len(stack); n > 1 && (stack[n-1].kind != '\\' || c == ')') {
				pop()
			}
			operand = true
		case '"', '\'':
			afterColon = wasAfterColon
			var ok bool
			if i, ok = openString(i, 0); !ok {
				return deepest, steps
			}
			afterColon = false
			continue
		case '#':
			j := i
			for j < len(src) && src[j] == '#' {
				j++
				steps++
			}
			if j < len(src) && (src[j] == '"' || src[j] == '\'') {
				afterColon = wasAfterColon
				var ok bool
				if i, ok = openString(j, j-i); !ok {
					return deepest, steps
				}
				afterColon = false
				continue
			}
			i = j
			operand = true // a definition's name
			continue
		default:
			operand = isOperandByte(c)
		}
		i++
	}
	return deepest, steps
}

// operatorAt returns the length of the arithmetic, comparison or logical
// operator at src[i], or 0: + - * / < > <= >= == != =~ !~ && ||. A //
// starts a comment, and & | ! = alone are no such operator.
func operatorAt(src []byte, i int) int {
	c := src[i]
	var next byte
	if i+1 < len(src) {
		next = src[i+1]
	}
	switch {
	case c == '/' && next == '/':
		return 0
	case c == '+' || c == '-' || c == '*' || c == '/':
		return 1
	case (c == '<' || c == '>') && next == '=':
		return 2
	case c == '<' || c == '>':
		return 1
	case (c == '=' || c == '!') && (next == '=' || next == '~'):
		return 2
	case (c == '&' && next == '&') || (c == '|' && next == '|'):
		return 2
	}
	return 0
}

// isOperandByte reports whether c ends an operand when it ends a token:
// a letter, a digit, _, $, or the . of ... or of a number.
func isOperandByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '$' || c == '.' || c >= 0x80
}
