//go:build !unix

package main

import "time"

// processCPU is not measured on this system; CPU per operation reads as zero.
func processCPU() time.Duration { return 0 }
