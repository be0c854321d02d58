#!/usr/bin/env python
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make a tiny random model that a real vLLM server loads and serves on a CPU in seconds.

Usage: make-tiny-model.py [--arch ARCH] [--seed N] [--force] OUT_DIR

Run it with the Python of a vLLM venv: it needs torch, transformers and tokenizers, which vLLM brings, and
nothing from the network. The tokenizer is a byte-level BPE of 1024 entries trained on the text shipped beside
this script (tiny-model-corpus.txt); the weights are drawn from --seed (default 0). ARCH is one of:

- deepseek_v3 (default): DeepseekV3ForCausalLM, DeepSeek-V3/R1's own architecture, shrunk: MLA attention and a
  mixture of experts (8 routed experts, 2 per token, 1 shared; layer 0 dense, layer 1 MoE), hidden size 128.
  Two sizes cannot shrink: kv_lora_rank 512 and qk_rope_head_dim 64, because vLLM's CPU MLA kernel exists only
  for DeepSeek's real latent head size (512 + 64 = 576); and n_group / topk_group must be set (1 / 1): left unset,
  the server starts and the first request kills its engine. Serve it with --dtype float32 and
  --attention-backend CPU_MLA: on a CPU with AMX, vLLM otherwise picks its AMX_MLA backend, which takes only
  16-bit or int8 weights and fails at load on float32 ones.
- deepseek_v2: DeepseekV2ForCausalLM, the same shape with V2's greedy expert choice.
- qwen2: Qwen2ForCausalLM shaped like DeepSeek-R1-Distill-Qwen (the model quantization tools know by that name).
- llama: LlamaForCausalLM, the plain dense model.

Every model has 2 layers, 256 positions, float32 weights and tied embeddings where the architecture allows it.
Its answers are nonsense, but greedy decoding gives the same answer to the same prompt, run to run and machine to
machine, and so does this script: the same corpus, arguments and library versions give byte-identical files.

OUT_DIR gets config.json, generation_config.json, model.safetensors, tokenizer.json, tokenizer_config.json (with a
chat template, so that /v1/chat/completions works) and SHA256SUMS (`sha256sum` format, relative paths, sorted),
with files 0644 and directories 0755 whatever the umask, so that a service user can read them. The directory
appears whole or not at all: it is built beside OUT_DIR and renamed. An OUT_DIR that exists and is not empty is
kept unless --force.
"""

import argparse
import hashlib
import os
import shutil
import sys
import tempfile

# Never ask a model hub for anything; keep the libraries quiet and single-minded.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny-model-corpus.txt")
SEED = 0
VOCAB_SIZE = 1024
SPECIAL_TOKENS = ["<|begin_of_text|>", "<|end_of_text|>", "<|pad|>"]
BOS, EOS, PAD = SPECIAL_TOKENS
# Llama-like roles; the model's answers mean nothing, the template only has to render.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ message['role'] }}: {{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}"
)
# What every architecture shares: the tokenizer's ids and the context.
COMMON = dict(
    vocab_size=VOCAB_SIZE,
    hidden_size=128,
    num_hidden_layers=2,
    max_position_embeddings=256,
    bos_token_id=0,
    eos_token_id=1,
    pad_token_id=2,
)
# The models that are quantized and compared with their float parent draw their weights 15 times wider than
# transformers' default (0.02): from the default the next-token distribution is nearly flat (the two most likely
# tokens a median 0.05 apart in logits), so that int8 rounding alone flips greedy choices and an agreement check
# could not tell a correct quantization from a broken one; at 0.3 the median gap is 0.74. Only the embeddings and the
# output head keep the wide draw: the decoder layers' matrices are scaled back to the default's width
# (BLOCK_SCALE), because at 0.3 the attention scores are so steep that the layers amplify any rounding (float32 to
# bfloat16 alone kept 0.86 of the greedy choices and moved log-probabilities by 0.23 nats, so no quantization could
# pass an agreement check); with the layers at 0.02 the median gap stays 0.58 and bfloat16 keeps 0.97 of them.
CONFIDENT = dict(initializer_range=0.3)
BLOCK_SCALE = 0.02 / 0.3
# DeepSeek's multi-head latent attention and mixture of experts, at the smallest sizes vLLM's CPU build serves.
DEEPSEEK = dict(
    COMMON,
    **CONFIDENT,
    intermediate_size=256,
    moe_intermediate_size=64,
    num_attention_heads=4,
    num_key_value_heads=4,
    q_lora_rank=None,
    kv_lora_rank=512,
    qk_rope_head_dim=64,
    qk_nope_head_dim=32,
    v_head_dim=32,
    n_routed_experts=8,
    n_shared_experts=1,
    num_experts_per_tok=2,
    first_k_dense_replace=1,
    moe_layer_freq=1,
    n_group=1,
    topk_group=1,
    tie_word_embeddings=False,
)
# (transformers config class, model class, its arguments).
ARCHITECTURES = {
    # V3's router as its checkpoints declare it (sigmoid scores, the bias-corrected top-k): vLLM reads the router's
    # e_score_correction_bias, which transformers saves, only with topk_method noaux_tc.
    "deepseek_v3": ("DeepseekV3Config", "DeepseekV3ForCausalLM",
                    dict(DEEPSEEK, routed_scaling_factor=2.5, norm_topk_prob=True, scoring_func="sigmoid",
                         topk_method="noaux_tc")),
    "deepseek_v2": ("DeepseekV2Config", "DeepseekV2ForCausalLM", dict(DEEPSEEK, topk_method="greedy")),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM",
              dict(COMMON, intermediate_size=256, num_attention_heads=4, num_key_value_heads=2,
                   tie_word_embeddings=False, **CONFIDENT)),
    "llama": ("LlamaConfig", "LlamaForCausalLM",
              dict(COMMON, intermediate_size=256, num_attention_heads=4, num_key_value_heads=4, head_dim=32,
                   tie_word_embeddings=True)),
}


def train_tokenizer(corpus_path):
    """A byte-level BPE tokenizer with exactly VOCAB_SIZE entries, special tokens first."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=1,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    with open(corpus_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    tokenizer.train_from_iterator(lines, trainer=trainer)
    if tokenizer.get_vocab_size() != VOCAB_SIZE:
        sys.exit("make-tiny-model: the corpus %s gave %d tokens, not %d: it needs more text"
                 % (corpus_path, tokenizer.get_vocab_size(), VOCAB_SIZE))
    for token_id, token in enumerate(SPECIAL_TOKENS):
        assert tokenizer.token_to_id(token) == token_id, token
    return tokenizer


def save_tokenizer(tokenizer, out):
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token=BOS, eos_token=EOS, pad_token=PAD,
        model_max_length=COMMON["max_position_embeddings"], clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)


def save_model(out, arch, seed):
    import torch
    import transformers
    from transformers import GenerationConfig

    config_class, model_class, arguments = ARCHITECTURES[arch]
    torch.manual_seed(seed)
    config = getattr(transformers, config_class)(**arguments)
    model = getattr(transformers, model_class)(config).to(torch.float32).eval()
    if arguments.get("initializer_range") == CONFIDENT["initializer_range"]:
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                if name.startswith("model.layers.") and parameter.dim() >= 2:
                    parameter.mul_(BLOCK_SCALE)
    model.generation_config = GenerationConfig(
        bos_token_id=COMMON["bos_token_id"], eos_token_id=COMMON["eos_token_id"], pad_token_id=COMMON["pad_token_id"],
        do_sample=False,
    )
    from transformers.utils import logging

    logging.disable_progress_bar()
    model.save_pretrained(out, safe_serialization=True)


def finish(out):
    """Make every file readable by any user and write SHA256SUMS over them."""
    sums = []
    for root, dirs, files in os.walk(out):
        dirs.sort()
        os.chmod(root, 0o755)
        for name in files:
            path = os.path.join(root, name)
            os.chmod(path, 0o644)
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            sums.append((os.path.relpath(path, out), digest.hexdigest()))
    with open(os.path.join(out, "SHA256SUMS"), "w", encoding="utf-8") as f:
        for rel, hexdigest in sorted(sums):
            f.write("%s  %s\n" % (hexdigest, rel))
    os.chmod(os.path.join(out, "SHA256SUMS"), 0o644)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", metavar="OUT_DIR")
    parser.add_argument("--arch", choices=sorted(ARCHITECTURES), default="deepseek_v3", help="the architecture")
    parser.add_argument("--seed", type=int, default=SEED, help="the seed of the random weights (default %(default)s)")
    parser.add_argument("--force", action="store_true", help="replace an OUT_DIR that is not empty")
    args = parser.parse_args(argv)
    out = os.path.abspath(args.out_dir)
    if os.path.isdir(out) and os.listdir(out) and not args.force:
        sys.exit("make-tiny-model: %s exists and is not empty; --force replaces it" % out)
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".%s." % os.path.basename(out), dir=parent)
    try:
        save_tokenizer(train_tokenizer(CORPUS), tmp)
        save_model(tmp, args.arch, args.seed)
        finish(tmp)
        if os.path.lexists(out):
            shutil.rmtree(out) if os.path.isdir(out) and not os.path.islink(out) else os.unlink(out)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(out)


if __name__ == "__main__":
    main()
