#!/usr/bin/env bash
# A benchmark, not a test: the vLLM service the vllm_service role deployed against `vllm serve` started by hand with
# the same arguments and environment, on the same node at the same time, each measured with `vllm bench serve`
# (fixed prompts, lengths, concurrency and seed), alternating A B A B so that the machine's noise falls on both.
# Prints each run's request and output-token throughput and the deployed / by-hand ratio of their means.
#
# Usage: serving_vs_hand.sh [NODE]   NODE: a podman container where the role deployed vllm.service in native mode
#                                    (default: x86-serving-demo-node, which `make demo` leaves running)
# Environment: PROMPTS (default 64), CONCURRENCY (default 4), INPUT_LEN (32), OUTPUT_LEN (16), ROUNDS (2). On this
# project's shared 2-core machine two rounds of the same server differ by up to ~20 %: compare the ratio of means.
set -euo pipefail
node=${1:-x86-serving-demo-node}
prompts=${PROMPTS:-64} concurrency=${CONCURRENCY:-4} input_len=${INPUT_LEN:-32} output_len=${OUTPUT_LEN:-16}
rounds=${ROUNDS:-2}

podman exec "$node" systemctl is-active --quiet vllm.service || {
  echo "serving_vs_hand: vllm.service is not active in $node (run make demo first)" >&2; exit 1; }

podman exec -i "$node" bash -s "$prompts" "$concurrency" "$input_len" "$output_len" "$rounds" <<'NODE'
set -euo pipefail
prompts=$1 concurrency=$2 input_len=$3 output_len=$4 rounds=$5
work=$(mktemp -d /tmp/serving-bench.XXXXXX)
# The deployed service's exact command line, from its unit, with only the port changed.
mapfile -t argv < <(python3 - <<'PY'
import re, shlex
unit = open('/etc/systemd/system/vllm.service').read()
line = re.search(r'^ExecStart=(.*)$', unit, re.M).group(1)
argv = shlex.split(line.replace('$$', '$').replace('%%', '%'))
argv[argv.index('--port') + 1] = '8001'
print('\n'.join(argv))
PY
)
model=${argv[$(( $(printf '%s\n' "${argv[@]}" | grep -n -x -- --model | cut -d: -f1) ))]}
name=${argv[$(( $(printf '%s\n' "${argv[@]}" | grep -n -x -- --served-model-name | cut -d: -f1) ))]}
venv=$(dirname "$(dirname "${argv[0]}")")
user=$(systemctl show -p User --value vllm.service)
# The same environment the unit gets (the file is in systemd's syntax, which bash reads for these values).
set -a; . /etc/vllm/vllm.env; set +a
export OPENAI_API_KEY=${VLLM_API_KEY:-}
echo "by hand: runuser -u $user -- ${argv[*]}"
runuser -u "$user" --preserve-environment -- env HOME="$work" VLLM_CACHE_ROOT="$work/cache" "${argv[@]}" > "$work/hand.log" 2>&1 &
hand=$!
trap 'kill $hand 2>/dev/null; wait $hand 2>/dev/null || true; rm -rf "$work"' EXIT
chmod 777 "$work"
for _ in $(seq 300); do
  python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:8001/health", timeout=2)' 2>/dev/null && break
  kill -0 $hand 2>/dev/null || { cat "$work/hand.log"; echo "the hand-started server exited" >&2; exit 1; }
  sleep 1
done
bench() {
  "$venv/bin/vllm" bench serve --backend openai --base-url "http://127.0.0.1:$1" --model "$model" \
    --served-model-name "$name" --tokenizer "$model" --dataset-name random --random-input-len "$input_len" \
    --random-output-len "$output_len" --num-prompts "$prompts" --max-concurrency "$concurrency" --seed 0 \
    --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99 \
    --save-result --result-dir "$work" --result-filename "$2.json" > "$work/$2.out" 2>&1 ||
    { cat "$work/$2.out"; echo "vllm bench serve failed against port $1" >&2; exit 1; }
}
for round in $(seq "$rounds"); do
  bench 8000 "deployed-$round"
  bench 8001 "hand-$round"
done
python3 - "$work" "$rounds" <<'PY'
import json, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def load(kind):
    return [json.load(open('%s/%s-%d.json' % (work, kind, n))) for n in range(1, rounds + 1)]
runs = {'deployed (vllm.service)': load('deployed'), 'by hand (same argv)': load('hand')}
print('%-26s %s' % ('', '  '.join('run %d: req/s  out tok/s  p99 e2e ms' % n for n in range(1, rounds + 1))))
means = {}
for kind, results in runs.items():
    print('%-26s %s' % (kind, '  '.join('%11.2f %10.1f %11.1f' % (r['request_throughput'], r['output_throughput'], r.get('p99_e2el_ms', float('nan')))
                                         for r in results)))
    means[kind] = sum(r['output_throughput'] for r in results) / len(results)
deployed, hand = means.values()
print('mean output tokens/s: deployed %.1f, by hand %.1f; ratio deployed/by hand = %.3f' % (deployed, hand, deployed / hand))
PY
NODE
