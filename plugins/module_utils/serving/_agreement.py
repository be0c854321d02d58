# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

How closely a candidate model (a quantization) follows its reference (the float parent), measured through two vLLM
OpenAI-compatible endpoints and vLLM's own log-probabilities, without AnsibleModule: the requests, their answers
read, the measures, the verdict against thresholds, and the quality record the serving role reads before it serves
a quantized model. Standard library only, Python 3.8 syntax (it runs on the managed host).

For each fixed prompt, greedy (temperature 0):

1. both endpoints generate ``max_tokens`` tokens (``return_token_ids``): the first position where the candidate's
   tokens leave the reference's is the free generation's first divergence;
2. both endpoints score the same token sequence, the prompt followed by the reference's continuation, with
   ``prompt_logprobs: 1`` (teacher forcing: each position is predicted from the same text on both sides, so one early
   divergence does not decide every later position). At each position: whether both give the same top-1 token
   (top-1 agreement), and the log-probability each gives the text's own token (the mean absolute difference per token
   is the log-likelihood difference).

A malformed answer raises AgreementError naming the endpoint, the request and what is missing.
"""

from __future__ import annotations

import json
import math
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._numbers import MAX_SECONDS, number_problem

SCHEMA = 'kunpeng_ascend.vllm/model-quality/1'
# Where the quality records live on a node: one per candidate model, named after its manifest's SHA-256 (the model
# directories themselves may be read-only).
RECORD_DIR = '/var/lib/kunpeng_ascend/model_quality'
MAX_RECORD_BYTES = 1 << 20
DIGEST = re.compile(r'[0-9a-f]{64}\Z')

# Short prompts of everyday text: with the default continuation they fit a 256-token context, the tiny test models'.
DEFAULT_PROMPTS = (
    'The capital of France is',
    'def fibonacci(n):',
    'Water boils at a temperature of',
    'Once upon a time, in a small village,',
    'The three primary colours are',
    'To install the package, run the following command:',
)
DEFAULT_MAX_TOKENS = 32
# The largest max_mean_abs_logprob_diff: a mean difference of 100 nats a token (a factor e^100) means one side gives
# the other's tokens no chance at all; a larger threshold would only turn the check off, which null says.
MAX_LOGPROB_DIFF = 100
# The longest continuation a comparison asks for (a prompt and its continuation must fit both contexts anyway).
MAX_TOKENS = 4096
# The thresholds' defaults (docs/model-agreement.md says why): a W8A8 quantization that works keeps well over nine
# tokens in ten of its parent's greedy choices under teacher forcing, and moves the log-probability of a text's tokens
# by a few hundredths of a nat on average.
DEFAULT_MIN_TOP1_AGREEMENT = 0.9
DEFAULT_MAX_MEAN_ABS_LOGPROB_DIFF = 0.15
# How many tokens a user's prompt may have to leave room for the continuation in the smallest context.
MAX_PROMPTS = 64
MAX_PROMPT_CHARS = 2000

PASS = 'PASS'
SIDES = ('reference', 'candidate')
FAIL = 'FAIL'


class AgreementError(Exception):
    """An answer or an input this code cannot use; ``msg`` says which and why."""

    def __init__(self, msg):
        super().__init__(msg)
        self.msg = msg


# ------------------------------------------------------------------------------------------------------- inputs

def read_prompts(text, source):
    """The prompts of a user's file: one per line, blank lines skipped, backslash-n for a line break inside one.
    AgreementError naming ``source`` when it holds none, too many, or one too long."""
    prompts = [line.replace('\\n', '\n') for line in text.splitlines() if line.strip()]
    return check_prompts(prompts, source)


def check_prompts(prompts, source):
    """``prompts`` as a list, checked: 1 to MAX_PROMPTS non-empty strings of at most MAX_PROMPT_CHARS characters."""
    if not prompts:
        raise AgreementError('%s holds no prompt' % source)
    if len(prompts) > MAX_PROMPTS:
        raise AgreementError('%s holds %d prompts, more than %d' % (source, len(prompts), MAX_PROMPTS))
    for number, prompt in enumerate(prompts, 1):
        if not isinstance(prompt, str) or not prompt.strip():
            raise AgreementError('%s: prompt %d is empty or not a string' % (source, number))
        if len(prompt) > MAX_PROMPT_CHARS:
            raise AgreementError('%s: prompt %d has %d characters, more than %d'
                                 % (source, number, len(prompt), MAX_PROMPT_CHARS))
    return list(prompts)


def threshold_problems(min_top1_agreement, max_mean_abs_logprob_diff, min_first_divergence, max_tokens,
                       request_timeout=None):
    """What is wrong with the thresholds and the numbers of a comparison, each naming its option: every one a
    finite number in its range (_numbers.number_problem: NaN, infinity, an overflowing or a boolean value refused),
    a threshold None when it is skipped. A NaN threshold would pass every comparison and leave a record that
    parse_record refuses."""
    checks = [
        ('min_top1_agreement', min_top1_agreement, dict(minimum=0, maximum=1)),
        ('max_mean_abs_logprob_diff', max_mean_abs_logprob_diff, dict(minimum=0, maximum=MAX_LOGPROB_DIFF)),
        ('max_tokens', max_tokens, dict(minimum=1, maximum=MAX_TOKENS, integer=True)),
        ('request_timeout', request_timeout, dict(above=0, maximum=MAX_SECONDS)),
    ]
    problems = []
    for option, value, bounds in checks:
        # A threshold of None is skipped, a request_timeout of None is the caller's default; max_tokens is always due.
        problem = number_problem(option, value, **bounds) if value is not None or option == 'max_tokens' else None
        if problem:
            problems.append(problem)
    if min_first_divergence is not None:
        # At most max_tokens (no later divergence can be seen); MAX_TOKENS when max_tokens itself is wrong.
        usable = number_problem('max_tokens', max_tokens, minimum=1, maximum=MAX_TOKENS, integer=True) is None
        problem = number_problem('min_first_divergence', min_first_divergence, minimum=0,
                                 maximum=int(max_tokens) if usable else MAX_TOKENS, integer=True)
        if problem:
            problems.append(problem)
    return problems


# ------------------------------------------------------------------------------------------------------- requests

def generation_request(prompt, max_tokens):
    """The /v1/completions body of a greedy generation that returns the prompt's and the continuation's token ids.
    EOS is ignored so that both models generate the same number of tokens."""
    return {'prompt': prompt, 'max_tokens': max_tokens, 'temperature': 0, 'ignore_eos': True,
            'return_token_ids': True}


def scoring_request(token_ids):
    """The /v1/completions body that scores ``token_ids`` (the log-probability of each and the top-1 token at each
    position, vLLM's ``prompt_logprobs``); one token is generated, vLLM's least."""
    return {'prompt': list(token_ids), 'max_tokens': 1, 'temperature': 0, 'prompt_logprobs': 1}


# ------------------------------------------------------------------------------------------------------- answers

def _choice(document, where):
    if not isinstance(document, dict):
        raise AgreementError('%s: the answer is not a JSON object' % where)
    choices = document.get('choices')
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise AgreementError('%s: the answer has no choices' % where)
    return choices[0]


def _token_ids(value):
    return isinstance(value, list) and all(isinstance(item, int) and not isinstance(item, bool) and item >= 0
                                           for item in value)


def parse_generation(document, where):
    """``(prompt token ids, generated token ids)`` of a generation's answer (``choices[0].prompt_token_ids`` and
    ``token_ids``, which vLLM returns with ``return_token_ids``)."""
    choice = _choice(document, where)
    prompt_ids = choice.get('prompt_token_ids')
    token_ids = choice.get('token_ids')
    if not _token_ids(prompt_ids) or not prompt_ids or not _token_ids(token_ids):
        raise AgreementError('%s: the answer has no choices[0].prompt_token_ids and token_ids (a vLLM server answers '
                             'them to return_token_ids; is this vLLM 0.10.2 or later?)' % where)
    return list(prompt_ids), list(token_ids)


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_scoring(document, token_ids, where):
    """For each position of ``token_ids`` after the first: ``(log-probability of the token there, top-1 token id)``,
    from ``choices[0].prompt_logprobs`` (a list as long as the prompt, None first, then per position a dict
    ``{token id: {logprob, rank, decoded_token}}`` holding the position's own token and the top-1)."""
    choice = _choice(document, where)
    entries = choice.get('prompt_logprobs')
    if not isinstance(entries, list) or len(entries) != len(token_ids):
        raise AgreementError('%s: the answer has no choices[0].prompt_logprobs for the %d tokens sent (got %s)'
                             % (where, len(token_ids), 'a list of %d' % len(entries) if isinstance(entries, list)
                                else json.dumps(entries)[:80]))
    positions = []
    for index in range(1, len(token_ids)):
        entry = entries[index]
        if not isinstance(entry, dict):
            raise AgreementError('%s: prompt_logprobs[%d] is not an object' % (where, index))
        own = entry.get(str(token_ids[index]))
        top = [key for key, value in entry.items() if isinstance(value, dict) and value.get('rank') == 1]
        if not isinstance(own, dict) or not _number(own.get('logprob')):
            raise AgreementError('%s: prompt_logprobs[%d] has no log-probability for token %d'
                                 % (where, index, token_ids[index]))
        if len(top) != 1 or not top[0].isdigit():
            raise AgreementError('%s: prompt_logprobs[%d] has no single top-1 token (rank 1)' % (where, index))
        positions.append((float(own['logprob']), int(top[0])))
    return positions


# ------------------------------------------------------------------------------------------------------- measures

def first_divergence(reference, candidate):
    """The first position where ``candidate`` leaves ``reference`` (token ids), None when it never does."""
    for index, (ours, theirs) in enumerate(zip(reference, candidate)):
        if ours != theirs:
            return index
    if len(reference) != len(candidate):
        return min(len(reference), len(candidate))
    return None


def compare_prompt(prompt, generated, scored):
    """One prompt's comparison. ``generated``: ``{'reference': (prompt ids, ids), 'candidate': (...)}`` of
    parse_generation; ``scored``: ``{'reference': positions, 'candidate': positions}`` of parse_scoring of the same
    sequence."""
    reference_prompt, reference_ids = generated['reference']
    candidate_prompt, candidate_ids = generated['candidate']
    if reference_prompt != candidate_prompt:
        raise AgreementError('the two endpoints turn prompt %r into different tokens (%d and %d): the candidate must '
                             'share its parent\'s tokenizer'
                             % (prompt[:60], len(reference_prompt), len(candidate_prompt)))
    ours, theirs = scored['reference'], scored['candidate']
    if len(ours) != len(theirs):
        raise AgreementError('the two endpoints scored %d and %d positions of prompt %r'
                             % (len(ours), len(theirs), prompt[:60]))
    agreeing = sum(1 for ours_at, theirs_at in zip(ours, theirs) if ours_at[1] == theirs_at[1])
    differences = [abs(ours_at[0] - theirs_at[0]) for ours_at, theirs_at in zip(ours, theirs)]
    return {
        'prompt': prompt,
        'prompt_tokens': len(reference_prompt),
        'generated_tokens': len(reference_ids),
        'positions': len(ours),
        'top1_agreeing': agreeing,
        'abs_logprob_diff_sum': sum(differences),
        'reference_logprob_sum': sum(position[0] for position in ours),
        'candidate_logprob_sum': sum(position[0] for position in theirs),
        'first_divergence': first_divergence(reference_ids, candidate_ids),
    }


def compare(prompts, max_tokens, send):
    """Every prompt compared; ``send(side, body)`` posts ``body`` to /v1/completions of side C(reference) or
    C(candidate) with its served model name and returns the answer's JSON document (raising AgreementError)."""
    compared = []
    for prompt in prompts:
        generated = {}
        for side in SIDES:
            generated[side] = parse_generation(send(side, generation_request(prompt, max_tokens)),
                                               '%s, generating from prompt %r' % (side, prompt[:60]))
        sequence = generated['reference'][0] + generated['reference'][1]
        scored = {}
        for side in SIDES:
            scored[side] = parse_scoring(send(side, scoring_request(sequence)), sequence,
                                         '%s, scoring prompt %r and the reference\'s continuation' % (side, prompt[:60]))
        compared.append(compare_prompt(prompt, generated, scored))
    return compared


def summarize(compared):
    """The measures over every prompt: top-1 agreement (share of scored positions), the mean absolute log-probability
    difference per token (nats), the mean log-probability per token of each side, and the free generation's first
    divergence (the earliest over the prompts, and how many prompts diverged)."""
    positions = sum(item['positions'] for item in compared)
    if not positions:
        raise AgreementError('no position was scored: the prompts are one token each; give longer prompts')
    divergences = [item['first_divergence'] for item in compared if item['first_divergence'] is not None]
    return {
        'prompts': len(compared),
        'positions': positions,
        'top1_agreement': round(sum(item['top1_agreeing'] for item in compared) / float(positions), 4),
        'mean_abs_logprob_diff': round(sum(item['abs_logprob_diff_sum'] for item in compared) / positions, 4),
        'reference_mean_logprob': round(sum(item['reference_logprob_sum'] for item in compared) / positions, 4),
        'candidate_mean_logprob': round(sum(item['candidate_logprob_sum'] for item in compared) / positions, 4),
        'first_divergence_min': min(divergences) if divergences else None,
        'prompts_diverged': len(divergences),
    }


def verdict(measures, min_top1_agreement, max_mean_abs_logprob_diff, min_first_divergence=None):
    """``(PASS or FAIL, the failed checks)``: each threshold that is not None compared with its measure. A prompt whose
    free generation never diverged counts as diverging at its end (max_tokens)."""
    failures = []
    if min_top1_agreement is not None and measures['top1_agreement'] < min_top1_agreement:
        failures.append('top-1 agreement %.4f is below min_top1_agreement %s'
                        % (measures['top1_agreement'], min_top1_agreement))
    if max_mean_abs_logprob_diff is not None and measures['mean_abs_logprob_diff'] > max_mean_abs_logprob_diff:
        failures.append('mean absolute log-probability difference %.4f nats per token is above '
                        'max_mean_abs_logprob_diff %s' % (measures['mean_abs_logprob_diff'], max_mean_abs_logprob_diff))
    earliest = measures['first_divergence_min']
    if min_first_divergence is not None and earliest is not None and earliest < min_first_divergence:
        failures.append('the free greedy generation diverged at token %d, before min_first_divergence %d'
                        % (earliest, min_first_divergence))
    return (FAIL if failures else PASS), failures


# ------------------------------------------------------------------------------------------------------- the record

def record_path(digest, directory=RECORD_DIR):
    """The record of the candidate whose manifest has SHA-256 ``digest``; ValueError for anything but 64 lowercase
    hex digits (it could leave the directory)."""
    if not isinstance(digest, str) or not DIGEST.match(digest):
        raise ValueError('candidate_digest must be a SHA-256 (64 lowercase hex digits), the manifest_sha256 that '
                         'model_manifest returns, not %s' % json.dumps(digest))
    return '%s/%s.json' % (directory.rstrip('/'), digest)


def record_of(digest, status, failures, measures, thresholds, reference, candidate):
    """The quality record of a candidate (no secret, no time: the same measures give the same file)."""
    return {
        'schema': SCHEMA,
        'candidate_digest': digest,
        'status': status,
        'failures': list(failures),
        'measures': measures,
        'thresholds': thresholds,
        'reference': reference,
        'candidate': candidate,
    }


def record_text(record):
    """The text of ``record`` as the quality record file holds it. AgreementError when parse_record would not read
    it back as the same record (a NaN or an infinity, which JSON has not; a record too large or too deep, of another
    schema or status): a record is written only when its reader takes it, so that no check passes on a record that
    the serving role then refuses."""
    try:
        text = json.dumps(record, indent=2, sort_keys=True, allow_nan=False) + '\n'
    except (TypeError, ValueError) as error:
        raise AgreementError('the quality record cannot be written as JSON: %s' % error)
    digest = record.get('candidate_digest') if isinstance(record, dict) else None
    if not isinstance(digest, str) or not DIGEST.match(digest):
        # record_path refuses such a digest: no reader would ever look for this record.
        raise AgreementError('the quality record names no manifest SHA-256 (candidate_digest %s): it is not written'
                             % json.dumps(digest))
    read, problems = parse_record(text, digest)
    if problems or read != record:
        raise AgreementError('the quality record would not be read back as written (%s): it is not written'
                             % ('; '.join(problems) or 'it reads back otherwise'))
    return text


def parse_record(text, digest):
    """``(record, problems)``: the record when it is one this collection wrote for ``digest``, else None and what is
    wrong with it."""
    if text is None:
        return None, ['there is none']
    try:
        record = _json.loads(text, max_bytes=MAX_RECORD_BYTES)
    except ValueError as error:
        return None, ['it is not JSON (%s)' % error]
    if not isinstance(record, dict) or record.get('schema') != SCHEMA:
        return None, ['it is not a record of schema %s' % SCHEMA]
    problems = []
    if record.get('candidate_digest') != digest:
        problems.append('it is the record of manifest %s' % json.dumps(record.get('candidate_digest')))
    if record.get('status') not in (PASS, FAIL):
        problems.append('its status is %s' % json.dumps(record.get('status')))
    if not isinstance(record.get('measures'), dict):
        problems.append('it has no measures')
    return (None, problems) if problems else (record, [])


def serving_problems(record, problems):
    """Why a quantized model may not be served, from parse_record's answer: none when its record says PASS."""
    if problems:
        return problems
    if record['status'] != PASS:
        return ['its agreement check failed: %s' % '; '.join(record.get('failures') or ['status FAIL'])]
    return []


def is_quantized(config, files):
    """Whether a model directory holds a quantized model: its ``config`` (config.json, a dict or None) declares a
    ``quantization_config`` (llm-compressor, AutoAWQ, GPTQ...), or ``files`` (its file names) hold msModelSlim's
    ``quant_model_description*.json``."""
    if isinstance(config, dict) and config.get('quantization_config'):
        return True
    return any(name.startswith('quant_model_description') and name.endswith('.json') for name in files)
