package analytics

import (
	"errors"
	"fmt"
)

// Code classifies an error by what the caller can do about it. The HTTP
// layer maps each code to one status; nothing else inspects error text.
type Code string

const (
	Invalid         Code = "invalid"         // the request is wrong; the message says how
	Unauthorized    Code = "unauthorized"    // no valid report key, or no valid plan
	Unauthenticated Code = "unauthenticated" // no valid platform token
	NotFound        Code = "not_found"
	Conflict        Code = "conflict"
	TooLarge        Code = "too_large"
	Unavailable     Code = "unavailable" // the store cannot be reached
	Internal        Code = "internal"
)

// Error is an error whose message is safe to show to the caller.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with a caller-safe message.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, or Internal.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// ErrorMessage returns the caller-safe message of err, or "" if it has none.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return ""
}

// StoreError names the operation op in err, a store's failure. An error
// with a code keeps it; one that unreachable says comes from a store that
// cannot be reached becomes Unavailable, so that callers answer 503 rather
// than 500.
func StoreError(op string, err error, unreachable func(error) bool) error {
	switch {
	case err == nil:
		return nil
	case ErrorCode(err) != Internal:
		return fmt.Errorf("%s: %w", op, err)
	case unreachable(err):
		return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// ErrUnavailable marks a failure to reach the store; stores wrap it so that
// callers answer 503 rather than 500.
var ErrUnavailable = &Error{Code: Unavailable, Message: "Service unavailable"}

// Plural returns "1 day", "2 days": n and unit, in the plural unless n is 1.
func Plural(n int, unit string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", unit)
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
