# shellcheck shell=bash
# Shared by tools/run-tests.sh and tools/bench-fleet.sh (sourced): the CPU seconds a shell's children used.

# The CPU seconds, user and system, of a shell's children that ended, from its `times` on stdin (the second line, such
# as "1m39.424s 0m46.537s"), as a whole number; ? without one. `times` must be written to a file first: in a pipe it
# runs in a shell of its own, which has no children.
children_cpu() {
  awk 'END { if (NR < 2) print "?" } NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); n += t[1] * 60 + t[2] } printf "%.0f", n }'
}
