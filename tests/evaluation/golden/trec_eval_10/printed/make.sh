#!/usr/bin/env bash
# Regenerates this folder's outputs with NIST's trec_eval 10.0 program as released (not run by the tests):
#   bash tests/evaluation/golden/trec_eval_10/printed/make.sh "$(../shared/tools/build-trec-eval.sh)"
# Each NAME.out is what the program printed for the arguments in CASES; test_trec_layout.py asks
# `bm25lab evaluate --trec-eval 10 --format trec` for the same measures and compares the text byte for byte.
set -euo pipefail
te=${1:?usage: make.sh PATH/TO/trec_eval}
here=$(cd "$(dirname "$0")" && pwd)
cran=$here/../cranfield
run=$(mktemp); trap 'rm -f "$run"' EXIT
gzip -dc "$cran/bm25-top100.run.gz" > "$run"
while IFS='|' read -r name args; do
  # shellcheck disable=SC2086
  "$te" $args "$cran/qrels.trec" "$run" | gzip -n > "$here/$name.out.gz"
done < "$here/CASES"
