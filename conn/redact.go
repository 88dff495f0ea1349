package conn

import "fmt"

// optionsFields is Options without its methods, so formatting it does not recurse.
type optionsFields Options

// String shows the options with the password replaced, so that options printed with %v
// or %+v, logged or wrapped into an error never reveal a credential.
func (o Options) String() string { return fmt.Sprintf("%+v", optionsFields(o.redacted())) }

// GoString is String for %#v.
func (o Options) GoString() string { return fmt.Sprintf("%#v", optionsFields(o.redacted())) }

func (o Options) redacted() Options {
	if o.Password != "" {
		o.Password = "xxxxx"
	}
	return o
}
