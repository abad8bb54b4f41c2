#!/usr/bin/env bash
# Measures the real mcpbridge binary over stdio and prints a markdown table
# (docs/benchmarks.md explains the figures):
#
#   start-up to the initialize response, p50/p99 latency of a tools/call
#   beside `mcpbridge serve --stdio` (the floor: the same tools, no bridge),
#   calls per second with 16 in flight, and peak RSS for small calls and for
#   one 50 MB tool result.
#
# When mcp-remote is installed in .tools/bench (npm install --prefix
# .tools/bench mcp-remote@0.15.1) it is measured the same way for comparison.
# Then the in-process Go benchmarks run (relay vs floor over io.Pipe).
#
# Environment: BENCH_ARGS (extra benchrun flags, e.g. "-calls 500"),
# BENCH_GO=0 skips the Go benchmarks, BENCH_MCP_REMOTE=0 skips mcp-remote.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

args=()
proxy=".tools/bench/node_modules/mcp-remote/dist/proxy.js"
if [ "${BENCH_MCP_REMOTE:-1}" != 0 ] && [ -f "$proxy" ] && command -v node >/dev/null; then
	args+=(-mcp-remote "$proxy")
fi

echo "## mcpbridge benchmarks — $(date -u +%Y-%m-%d), $(uname -sm), $(nproc) CPUs"
echo
# shellcheck disable=SC2086
go run ./internal/testpeers/benchrun "${args[@]}" ${BENCH_ARGS:-}

if [ "${BENCH_GO:-1}" != 0 ]; then
	echo
	echo '```'
	go test -tags nogui -run '^$' -bench 'BenchmarkCall' -benchtime 2000x -count 3 ./internal/bridge/
	echo '```'
fi
