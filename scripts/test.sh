#!/usr/bin/env bash
# The test command: passes on a fresh machine (Debian 12, Go, Node and npm).
#
#   1. scripts/setup-test-deps.sh    Debian packages and the npm test peers
#   2. go vet -tags nogui ./...
#   3. go test -race -tags nogui -count=1 ./...   (missing peers fail, never skip)
#   4. scripts/keyring-test.sh       when present (tests against a real Secret Service)
#   5. bounded fuzzing               every Fuzz target, MCPBRIDGE_FUZZTIME each (default 20s)
#   6. scripts/tray-smoke.sh         the real tray (default cgo build) under Xvfb, with a screenshot
#   7. packaging/linux.sh            the Linux .tar.xz package
#
# Every step runs even if an earlier one failed; the exit status is non-zero
# when any failed, and a summary closes the output.
# Environment: MCPBRIDGE_FUZZTIME (e.g. 5s; 0 skips fuzzing), CI.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

export MCPBRIDGE_REQUIRE_PEERS=1
export CI="${CI:-}"
fuzztime="${MCPBRIDGE_FUZZTIME:-20s}"
tags=(-tags nogui)

summary=()
failed=0
pkgs_ok=0
pkgs_failed=0

# step NAME CMD...: runs CMD, records its outcome and duration.
step() {
	local name="$1"
	shift
	local start=$SECONDS rc=0
	printf '\n==> %s: %s\n' "$name" "$*"
	"$@" || rc=$?
	local took=$((SECONDS - start))
	if [ "$rc" -eq 0 ]; then
		summary+=("$(printf 'ok    %-22s %4ds' "$name" "$took")")
	else
		summary+=("$(printf 'FAIL  %-22s %4ds  (exit %d)' "$name" "$took" "$rc")")
		failed=$((failed + 1))
	fi
	return 0
}

run_go_test() {
	local log rc=0
	log="$(mktemp)"
	go test -race "${tags[@]}" -count=1 -timeout 20m ./... 2>&1 | tee "$log" || rc=$?
	[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
	pkgs_ok=$(grep -c '^ok ' "$log" || true)
	pkgs_failed=$(grep -c $'^FAIL\t' "$log" || true)
	rm -f "$log"
	return "$rc"
}

# fuzz_all runs each Fuzz target alone for $fuzztime (go test accepts one
# -fuzz target per package per invocation).
fuzz_all() {
	local listing rc=0 pkg name
	if [ "$fuzztime" = "0" ] || [ "$fuzztime" = "0s" ]; then
		echo "fuzzing skipped (MCPBRIDGE_FUZZTIME=$fuzztime)"
		return 0
	fi
	# `go test -list` prints the matching names of each package, then its
	# "ok  <package>" line.
	if ! listing="$(go test "${tags[@]}" -list '^Fuzz' ./... 2>&1)"; then
		echo "$listing"
		return 1
	fi
	local targets=()
	local names=()
	while IFS= read -r line; do
		case "$line" in
		Fuzz*) names+=("$line") ;;
		"ok "*)
			pkg="$(awk '{print $2}' <<<"$line")"
			for name in "${names[@]}"; do targets+=("$pkg $name"); done
			names=()
			;;
		*) names=() ;;
		esac
	done <<<"$listing"
	if [ "${#targets[@]}" -eq 0 ]; then
		echo "no Fuzz targets found"
		return 0
	fi
	echo "${#targets[@]} Fuzz targets, $fuzztime each"
	for t in "${targets[@]}"; do
		read -r pkg name <<<"$t"
		printf -- '--- fuzz %s %s\n' "$pkg" "$name"
		if ! go test "${tags[@]}" -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" "$pkg"; then
			echo "FAIL: fuzz $pkg $name (a failing input is saved under the package's testdata/fuzz/$name)"
			rc=1
		fi
	done
	return "$rc"
}

total_start=$SECONDS
step "setup-test-deps" bash scripts/setup-test-deps.sh
step "go vet" go vet "${tags[@]}" ./...
step "go test -race" run_go_test
if [ -f scripts/keyring-test.sh ]; then
	step "keyring-test" timeout 900 bash scripts/keyring-test.sh
else
	summary+=("$(printf 'skip  %-22s        (scripts/keyring-test.sh not present)' "keyring-test")")
fi
step "fuzz ($fuzztime each)" fuzz_all
# The default build (cgo, Fyne): the real tray under Xvfb, then the Linux package.
step "tray-smoke" timeout 900 bash scripts/tray-smoke.sh
step "package (linux)" timeout 1200 bash packaging/linux.sh

printf '\n==> summary (%ds)\n' "$((SECONDS - total_start))"
printf '%s\n' "${summary[@]}"
if [ "$failed" -eq 0 ]; then
	echo "all steps passed"
else
	echo "$failed step(s) failed"
fi
echo "packages: $pkgs_ok passed, $pkgs_failed failed"
[ "$failed" -eq 0 ]
