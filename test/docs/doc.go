// Package docs checks the repository's documentation against the code: every
// field of respire.Options has a row in docs/options.md, the full option
// reference, and every relative link and anchor in README.md and docs/*.md
// leads somewhere. The README is a guide that links to docs/ for the whole of
// each subject (issue 27), so a moved heading or a new option that nobody
// documented fails here rather than in a reader's browser.
//
// # Concurrency
//
// The package holds only tests; they start no goroutines.
package docs
