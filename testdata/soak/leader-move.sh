#!/bin/sh
# Leader moves on the embedded Kafka cluster must never make a consumer or a
# stage read its partition again (issue #17): runs leader-move-stage.yaml
# (next to this script) and the built-in kafka-leader-move RUNS times each
# (default 30), seeds 1..RUNS, and prints each variant's duplicates, lost
# and the crashes in its notes. Exits 1 if a transactional variant has a
# duplicate. Usage: testdata/soak/leader-move.sh [RUNS]
set -eu
runs=${1:-30}
dir=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$dir/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/dqbench" .)
bad=0
for scenario in "$dir/leader-move-stage.yaml" kafka-leader-move; do
	seed=1
	while [ "$seed" -le "$runs" ]; do
		rc=0
		"$tmp/dqbench" run "$scenario" --seed "$seed" -o json >"$tmp/out.json" 2>"$tmp/err.txt" || rc=$?
		line=$(jq -r '.runs[0] as $r | "\($r.scenario) seed \($r.seed): " + ([$r.variants[] | "\(.name) dup \(.duplicates) lost \(.lost) crashes \([.notes[]? | select(test("crash"))] | length)"] | join(" · "))' "$tmp/out.json")
		echo "$line (exit $rc)"
		txdup=$(jq '[.runs[0].variants[] | select(.name | test("transactional")) | .duplicates] | add // 0' "$tmp/out.json")
		if [ "$txdup" -gt 0 ] || [ "$rc" -ne 0 ]; then
			bad=1
		fi
		seed=$((seed + 1))
	done
done
if [ "$bad" -ne 0 ]; then
	echo "FAIL: a transactional variant duplicated, or a run did not pass"
	exit 1
fi
echo "ok: no transactional variant duplicated in $runs runs of each scenario"
