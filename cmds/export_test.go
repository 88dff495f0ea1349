//go:build unix

package cmds

// CPUPerOp is cpuPerOp for the benchmarks of package cmds_test.
var CPUPerOp = cpuPerOp
