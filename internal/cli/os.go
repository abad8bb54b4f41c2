package cli

import "runtime"

// isDesktopOS is true where a GUI session can be assumed without DISPLAY.
var isDesktopOS = runtime.GOOS == "darwin" || runtime.GOOS == "windows"
