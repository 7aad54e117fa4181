#!/usr/bin/env bash
# Passes when COMMAND is refused the way a user should see it:
#
#   tests/support/expect_failure.sh EXPECT -- COMMAND [args...]
#
# COMMAND must exit non-zero but not by a signal (status 128 and above: a crash or an
# abort is not a refusal), leave no sanitizer report, and print a line on stderr that
# matches EXPECT (an extended regular expression, e.g. '^specd: error: bad_value: ').
# On failure it says which of these did not hold and shows the command's stderr.
set -uo pipefail

[ $# -ge 3 ] && [ "$2" = "--" ] || { echo "usage: expect_failure.sh EXPECT -- COMMAND..." >&2; exit 2; }
expect=$1
shift 2
err=$(mktemp "${TMPDIR:-/tmp}/expect_failure.XXXXXX")
trap 'rm -f "$err"' EXIT

cmd="$*"
"$@" > /dev/null 2> "$err"
status=$?

fail() {
  echo "expect_failure: FAIL: $1 (exit status $status): $cmd" >&2
  echo "--- stderr ---" >&2
  cat "$err" >&2
  exit 1
}
[ "$status" -ne 0 ] || fail "the command succeeded"
[ "$status" -lt 128 ] || fail "the command died by signal $((status - 128))"
! grep -Eq 'Sanitizer|runtime error:' "$err" || fail "a sanitizer reported an error"
grep -Eq -- "$expect" "$err" || fail "stderr does not match '$expect'"
echo "expect_failure: ok: exit status $status, stderr matches '$expect': $cmd"
