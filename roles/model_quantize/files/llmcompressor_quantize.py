# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Quantize a float model directory with llm-compressor into compressed-tensors, for role model_quantize.

Run with the python of a venv that holds llmcompressor; the module model_quantize builds the argv:

  python llmcompressor_quantize.py --model SRC --output DIR --scheme W8A8 --calibration FILE
                                   [--ignore NAME_OR_re:PATTERN ...] [--max-seq-length N]

FILE holds one JSON object with a "text" string per line (the module writes it from the user's file or the
built-in set). The model is loaded in its own dtype on the CPU; the output is saved compressed (int8 weights,
per-channel scales) with the model's tokenizer files.
"""

import argparse
import json
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--model', required=True)
    parser.add_argument('--output', required=True)
    parser.add_argument('--scheme', required=True)
    parser.add_argument('--calibration', required=True)
    parser.add_argument('--ignore', action='append', default=[])
    parser.add_argument('--max-seq-length', type=int, default=256)
    args = parser.parse_args(argv)

    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.modifiers.quantization import QuantizationModifier
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with open(args.calibration, encoding='utf-8') as stream:
        texts = [json.loads(line)['text'] for line in stream if line.strip()]
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype='auto')
    dataset = Dataset.from_dict(dict(tokenizer(texts, truncation=True, max_length=args.max_seq_length)))
    recipe = QuantizationModifier(targets='Linear', scheme=args.scheme, ignore=args.ignore)
    oneshot(model=model, dataset=dataset, recipe=recipe, max_seq_length=args.max_seq_length,
            num_calibration_samples=len(texts))
    model.save_pretrained(args.output, save_compressed=True)
    tokenizer.save_pretrained(args.output)
    return 0


if __name__ == '__main__':
    sys.exit(main())
