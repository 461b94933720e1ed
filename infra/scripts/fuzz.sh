#!/usr/bin/env bash
# Run the property-based fuzz targets (the `fuzz` test binaries: tests/fuzz/ of switchyard-core
# and switchyard-adapters, tests/fuzz.rs of switchyard-http) for longer than the test suite
# does, and print cases and seconds per target.
#
#   infra/scripts/fuzz.sh [CASES] [SECONDS]
#
# CASES: cases per property (PROPTEST_CASES, default 20000); the plain regression tests in
# the same files run once. SECONDS: the time bound of each target (default 900): a target
# still running then is stopped and counted as failed. Every target gets one seed,
# PROPTEST_RNG_SEED if set, else a new random one, printed so a failure can be replayed:
#   PROPTEST_RNG_SEED=<seed> PROPTEST_CASES=<cases> cargo test -p <crate> --test fuzz -- --exact <target>
set -euo pipefail
cd "$(dirname "$0")/../.."

cases=${1:-20000}
limit=${2:-900}
seed=${PROPTEST_RNG_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
crates=(switchyard-core switchyard-adapters switchyard-http)

echo "fuzz.sh: ${cases} cases per property, at most ${limit} s per target, seed ${seed}"
# One crate at a time: built together, their dependencies' features would differ from the
# test suite's and rebuild them.
for crate in "${crates[@]}"; do cargo test -p "$crate" --test fuzz --no-run; done

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
failed=0
printf '%-20s %-80s %6s %8s  %s\n' crate target cases seconds result
for crate in "${crates[@]}"; do
  targets=$(cargo test -q -p "$crate" --test fuzz -- --list 2>/dev/null | sed -n 's/: test$//p')
  for target in $targets; do
    log="$logs/$crate.$target.log"
    started=$(date +%s.%N)
    if PROPTEST_CASES=$cases PROPTEST_RNG_SEED=$seed timeout "$limit" \
      cargo test -q -p "$crate" --test fuzz -- --exact "$target" >"$log" 2>&1; then
      result=ok
    else
      status=$?
      result=FAILED
      [ "$status" -eq 124 ] && result="FAILED (stopped after ${limit} s)"
      failed=$((failed + 1))
    fi
    seconds=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
    # A plain #[test] (a regression, a sanity check) takes no arguments and runs once.
    shown=$cases
    # A target is listed with its module path (`yaml::the_valid_yaml_loads`); its file is
    # tests/fuzz.rs or one under tests/fuzz/.
    tests="shared/${crate#switchyard-}/tests"
    if grep -rqs "fn ${target##*::}()" "$tests/fuzz.rs" "$tests/fuzz"; then shown=1; fi
    printf '%-20s %-80s %6s %8.1f  %s\n' "$crate" "$target" "$shown" "$seconds" "$result"
    if [ "$result" != ok ]; then
      grep -a -v '^ *[0-9]*: \|^ *at ' "$log" | tail -40 | sed 's/^/    /'
    fi
  done
done

if [ "$failed" -gt 0 ]; then
  echo "fuzz.sh: ${failed} target(s) failed (seed ${seed})" >&2
  exit 1
fi
echo "fuzz.sh: every target held (seed ${seed})"
