package command

// Some commands name keys through patterns rather than key arguments: KEYS and SCAN
// MATCH select key names with a glob pattern, and SORT and SORT_RO read the keys their
// BY and GET patterns make from each element. A key prefix confines them only when it
// is added to the pattern too; these functions find where.

// SortPatternIndexes appends to dst the positions in args, a SORT or SORT_RO command,
// of the BY and GET patterns that name keys, found by walking the options as the
// server does when it runs the command. A pattern names keys when it holds a '*',
// which the server replaces with each element; one without names none: BY without a
// '*' means no sorting (BY nosort), GET without one gives nil, and GET # gives the
// element itself.
func SortPatternIndexes(args []any, dst []int) []int {
	return sortOptions(dst, args, true)
}

// ScanMatchIndexes appends to dst the positions in args, a SCAN command (SCAN cursor
// [MATCH pattern] [COUNT n] [TYPE type]), of every MATCH pattern: the server reads the
// options in pairs after the cursor, and the last MATCH wins.
func ScanMatchIndexes(args []any, dst []int) []int {
	for i := 2; i+1 < len(args); i += 2 {
		if argIsKeyword(args[i], "MATCH") {
			dst = append(dst, i+1)
		}
	}
	return dst
}

// patternNamesKeys reports whether a SORT pattern holds a '*' before any NUL byte: the
// server looks for it with strchr, which stops there. Numbers hold none.
func patternNamesKeys(arg any) bool {
	switch a := arg.(type) {
	case string:
		return textHasStar(a)
	case []byte:
		return textHasStar(a)
	}
	return false
}

func textHasStar[T string | []byte](s T) bool {
	for i := 0; i < len(s) && s[i] != 0; i++ {
		if s[i] == '*' {
			return true
		}
	}
	return false
}
