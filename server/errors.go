package server

import "fmt"

// usageErr is an error the user can fix by calling the command differently; Main answers it
// with exit code 2.
type usageErr struct{ msg string }

func (e *usageErr) Error() string { return e.msg }

// usageError returns a usage error with a formatted message.
func usageError(format string, args ...any) error {
	return &usageErr{msg: fmt.Sprintf(format, args...)}
}
