#!/usr/bin/env bash
# A benchmark, not a test: the vLLM service the vllm_service role deployed against `vllm serve` started by hand with
# the same arguments and environment, on the same node at the same time, each measured with `vllm bench serve`
# (fixed prompts, lengths, concurrency and seed). After one discarded warm-up run against each, the rounds alternate
# the order A B, B A, A B, ... so that neither server always runs first (running first was worth up to 25 % on this
# project's shared 2-core machine), and each round gives one deployed / by-hand ratio. Prints every run, the mean
# output tokens/s of each server with its spread, and the ratio with the spread of the rounds' ratios.
#
# Usage: serving_vs_hand.sh [NODE]   NODE: a podman container where the role deployed vllm.service in native mode
#                                    (default: x86-serving-demo-node, which `make demo` leaves running)
# Environment: PROMPTS (default 64), CONCURRENCY (4), INPUT_LEN (32), OUTPUT_LEN (16), ROUNDS (4, at least 2: an
# even number gives both orders as often), WARMUP_PROMPTS (8; 0 skips the warm-up), HAND_PORT (8001).
# It fails, saying what is missing, when the node, the service, its unit's command line or vLLM's CLI is not there.
set -euo pipefail
node=${1:-x86-serving-demo-node}
prompts=${PROMPTS:-64} concurrency=${CONCURRENCY:-4} input_len=${INPUT_LEN:-32} output_len=${OUTPUT_LEN:-16}
rounds=${ROUNDS:-4} warmup=${WARMUP_PROMPTS:-8} hand_port=${HAND_PORT:-8001}
fail() { echo "serving_vs_hand: $*" >&2; exit 1; }
for value in "$prompts" "$concurrency" "$input_len" "$output_len" "$rounds" "$warmup" "$hand_port"; do
  case $value in '' | *[!0-9]*) fail "PROMPTS, CONCURRENCY, INPUT_LEN, OUTPUT_LEN, ROUNDS, WARMUP_PROMPTS and HAND_PORT must be whole numbers; got '$value'" ;; esac
done
[ "$rounds" -ge 2 ] || fail "ROUNDS must be 2 or more (one round of each order), not $rounds"

command -v podman >/dev/null || fail "podman is not installed here (run make demo first)"
podman container exists "$node" || fail "there is no container $node (run make demo first, or name the node)"
podman exec "$node" systemctl is-active --quiet vllm.service ||
  fail "vllm.service is not active in $node (run make demo first)"

podman exec -i "$node" bash -s "$prompts" "$concurrency" "$input_len" "$output_len" "$rounds" "$warmup" "$hand_port" <<'NODE'
set -euo pipefail
prompts=$1 concurrency=$2 input_len=$3 output_len=$4 rounds=$5 warmup=$6 hand_port=$7
fail() { echo "serving_vs_hand: $*" >&2; exit 1; }
work=$(mktemp -d /tmp/serving-bench.XXXXXX)
# The deployed service's exact command line, from its unit, with only the port changed; the model is the argument
# after `serve` (vLLM's CLI takes it positionally).
argv_text=$(python3 - "$hand_port" <<'PY'
import re, shlex, sys
try:
    unit = open('/etc/systemd/system/vllm.service').read()
except OSError as error:
    sys.exit('serving_vs_hand: cannot read the unit /etc/systemd/system/vllm.service: %s' % error)
found = re.search(r'^ExecStart=(.*)$', unit, re.M)
if not found:
    sys.exit('serving_vs_hand: /etc/systemd/system/vllm.service has no ExecStart= line')
argv = shlex.split(found.group(1).replace('$$', '$').replace('%%', '%'))
missing = [what for what, ok in (('serve', 'serve' in argv), ('--port', '--port' in argv),
                                 ('--served-model-name', '--served-model-name' in argv)) if not ok]
if missing or argv.index('serve') + 1 >= len(argv):
    sys.exit('serving_vs_hand: the unit\'s command line has no %s (a native vllm_service unit has all): %s'
             % (', '.join(missing) or 'model after serve', found.group(1)))
# The deployed port first, then the argv with the hand-started server's port.
print(argv[argv.index('--port') + 1])
argv[argv.index('--port') + 1] = sys.argv[1]
print('\n'.join(argv))
PY
) || exit 1
mapfile -t argv <<<"$argv_text"
deployed_port=${argv[0]}
argv=("${argv[@]:1}")
serve=0
for index in "${!argv[@]}"; do [ "${argv[$index]}" = serve ] && { serve=$index; break; }; done
model=${argv[$((serve + 1))]}
for index in "${!argv[@]}"; do [ "${argv[$index]}" = --served-model-name ] && name=${argv[$((index + 1))]}; done
# The venv the unit runs: argv[0] is its bin/python, possibly after numactl and its options.
python=
for word in "${argv[@]}"; do case $word in */bin/python*) python=$word; break ;; esac; done
[ -n "$python" ] || fail "no venv python in the unit's command line: ${argv[*]}"
venv=$(dirname "$(dirname "$python")")
[ -x "$python" ] || fail "$python is missing: is this a native vllm_service node?"
user=$(systemctl show -p User --value vllm.service)
[ -n "$user" ] || fail "vllm.service runs as no User= (a native vllm_service unit names its account)"
# The same environment the unit gets (the file is in systemd's syntax, which bash reads for these values).
set -a; . /etc/vllm/vllm.env; set +a
export OPENAI_API_KEY=${VLLM_API_KEY:-}
echo "deployed: vllm.service on port $deployed_port; by hand: runuser -u $user -- ${argv[*]}"
chmod 777 "$work"
runuser -u "$user" --preserve-environment -- env HOME="$work" VLLM_CACHE_ROOT="$work/cache" "${argv[@]}" > "$work/hand.log" 2>&1 &
hand=$!
trap 'kill $hand 2>/dev/null; wait $hand 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 300); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$hand_port/health', timeout=2)" 2>/dev/null && break
  kill -0 $hand 2>/dev/null || { tail -n 30 "$work/hand.log"; fail "the hand-started server exited"; }
  sleep 1
done
bench() {  # port, result name, prompts
  # vLLM's CLI through the venv's Python, as the unit runs it (a venv moved or mounted elsewhere keeps console
  # scripts whose first line names a Python that is not there).
  "$python" -m vllm.entrypoints.cli.main bench serve --backend openai --base-url "http://127.0.0.1:$1" --model "$model" \
    --served-model-name "$name" --tokenizer "$model" --dataset-name random --random-input-len "$input_len" \
    --random-output-len "$output_len" --num-prompts "$3" --max-concurrency "$concurrency" --seed 0 \
    --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99 \
    --save-result --result-dir "$work" --result-filename "$2.json" > "$work/$2.out" 2>&1 ||
    { tail -n 30 "$work/$2.out"; fail "vllm bench serve failed against port $1"; }
}
if [ "$warmup" -gt 0 ]; then
  bench "$deployed_port" warmup-deployed "$warmup"
  bench "$hand_port" warmup-hand "$warmup"
fi
for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 1 ]; then
    bench "$deployed_port" "deployed-$round" "$prompts"; bench "$hand_port" "hand-$round" "$prompts"
  else
    bench "$hand_port" "hand-$round" "$prompts"; bench "$deployed_port" "deployed-$round" "$prompts"
  fi
done
python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def load(kind):
    return [json.load(open('%s/%s-%d.json' % (work, kind, n))) for n in range(1, rounds + 1)]
deployed, hand = load('deployed'), load('hand')
print('round  order  deployed req/s  out tok/s  p99 e2e ms | by hand req/s  out tok/s  p99 e2e ms | ratio')
ratios = []
for n, (a, b) in enumerate(zip(deployed, hand), 1):
    ratio = a['output_throughput'] / b['output_throughput']
    ratios.append(ratio)
    print('%5d  %-5s  %14.2f %10.1f %11.1f | %13.2f %10.1f %11.1f | %.3f' % (
        n, 'A B' if n % 2 else 'B A', a['request_throughput'], a['output_throughput'], a.get('p99_e2el_ms', float('nan')),
        b['request_throughput'], b['output_throughput'], b.get('p99_e2el_ms', float('nan')), ratio))
def spread(values):
    return 'mean %.1f, stdev %.1f, min %.1f, max %.1f' % (statistics.mean(values), statistics.stdev(values),
                                                        min(values), max(values))
for label, results in (('deployed (vllm.service)', deployed), ('by hand (same argv)', hand)):
    print('%-24s output tokens/s: %s' % (label, spread([r['output_throughput'] for r in results])))
mean_ratio = statistics.mean(r['output_throughput'] for r in deployed) / statistics.mean(r['output_throughput'] for r in hand)
first_a = [r for n, r in enumerate(ratios, 1) if n % 2]
first_b = [r for n, r in enumerate(ratios, 1) if not n % 2]
print('ratio deployed / by hand = %.3f (rounds: %s; stdev %.3f; deployed first %.3f, by hand first %.3f)' % (
    mean_ratio, ', '.join('%.3f' % r for r in ratios), statistics.stdev(ratios), statistics.mean(first_a),
    statistics.mean(first_b)))
PY
NODE
