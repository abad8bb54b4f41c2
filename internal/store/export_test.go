package store

import (
	"runtime"

	"github.com/zalando/go-keyring"
)

var (
	keyringErrNotFound = keyring.ErrNotFound
	errTooBig          = keyring.ErrSetDataTooBig
)

func isUnixLike() bool { return runtime.GOOS != "windows" && runtime.GOOS != "darwin" }
