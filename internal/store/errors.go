package store

import "errors"

// Sentinels for states callers branch on.
var (
	// ErrNotFound: no endpoint with that name or id.
	ErrNotFound = errors.New("endpoint not found")
	// ErrExists: an endpoint with that name already exists.
	ErrExists = errors.New("endpoint already exists")
	// ErrSecretNotFound: the keyring has no such secret.
	ErrSecretNotFound = errors.New("secret not found in keyring")
	// ErrKeyringUnavailable: no usable keyring (no Secret Service, locked,
	// or it did not answer in time). ${ENV_VAR} header references work
	// without one.
	ErrKeyringUnavailable = errors.New("keyring unavailable")
	// ErrEnvNotSet: a header references an unset environment variable.
	ErrEnvNotSet = errors.New("environment variable not set")
	// ErrBrokenConfig: the config file exists but cannot be used; it is
	// left untouched until a person fixes it.
	ErrBrokenConfig = errors.New("config file is broken")
)

// UserError carries text that is safe and useful to show a person as is,
// e.g. in the tray or as the CLI's one-line message: it names the problem
// and what to do, and never contains a secret. Err keeps the detail for
// logs and errors.Is.
type UserError struct {
	Msg string
	Err error
}

func (e *UserError) Error() string { return e.Msg }
func (e *UserError) Unwrap() error { return e.Err }

// UserMessage returns the person-facing text inside err, if there is any.
func UserMessage(err error) (string, bool) {
	var ue *UserError
	if errors.As(err, &ue) {
		return ue.Msg, true
	}
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve.Error(), true
	}
	return "", false
}
