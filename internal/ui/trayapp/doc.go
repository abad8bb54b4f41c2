// Package trayapp starts the real tray app: the Fyne desktop driver
// (cgo, OpenGL), the system tray icon and the single-instance socket. It
// is kept apart from package ui so that the UI logic builds and is tested
// without cgo; the headless build (-tags nogui) leaves it out entirely.
package trayapp
