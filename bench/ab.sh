#!/usr/bin/env bash
# Side by side: one bench command run in two checkouts of vsearch (before / after a change),
# alternated round by round so both see the same load on a shared machine. Each run's result JSON
# (bench/results/<name>.json of that checkout) is copied to OUT/<round>-<label>.json with the
# 1-minute load average written beside it in OUT/runs.tsv.
#
#   bench/ab.sh OUT ROUNDS BEFORE_DIR AFTER_DIR RESULT_NAME -- bun bench/load.ts --secs 60
#
# Both checkouts need node_modules (a symlink to one install is fine). Not a test.
set -euo pipefail
out=$1 rounds=$2 before=$3 after=$4 name=$5
shift 5
[ "$1" = "--" ] && shift
mkdir -p "$out"
for ((r = 1; r <= rounds; r++)); do
  # Alternate which side goes first, so neither always runs on a warmer (or busier) box.
  if ((r % 2)); then order="before after"; else order="after before"; fi
  for label in $order; do
    dir=$before
    [ "$label" = after ] && dir=$after
    load=$(cut -d' ' -f1 /proc/loadavg)
    echo "== round $r $label ($dir) load $load: $*"
    (cd "$dir" && PATH="$dir/node_modules/.bin:$PATH" "$@")
    cp "$dir/bench/results/$name.json" "$out/$r-$label.json"
    printf '%s\t%s\t%s\t%s\n' "$r" "$label" "$load" "$(cut -d' ' -f1 /proc/loadavg)" >> "$out/runs.tsv"
  done
done
