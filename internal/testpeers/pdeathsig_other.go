//go:build unix && !linux

package testpeers

import "syscall"

func setPdeathsig(*syscall.SysProcAttr) {}
