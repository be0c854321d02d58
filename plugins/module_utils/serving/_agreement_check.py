# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

What module vllm_model_agreement does, decided once: its options checked (each message names the option), the two
endpoints asked through ``_vllm_endpoint``'s HTTP client with their keys masked, ``_agreement``'s measures and
verdict, and the candidate's quality record written atomically when it changed (check mode predicts it, diff shows
it). ``run(module)`` gives what the module exits with; the decisions on its options are pure functions beside it.
"""

from __future__ import annotations

import time

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._atomic_write import write_atomically
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import UnreadableFile, read_regular_file
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._secrets import mask, url_secrets
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _agreement
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._vllm_endpoint import NotYet, answered, base_url, request

PROMPTS_MAX_BYTES = 1 << 20
# What each prompt's entry of the result keeps of _agreement.compare_prompt's.
PER_PROMPT_KEYS = ('prompt', 'prompt_tokens', 'positions', 'top1_agreeing', 'first_divergence')


def thresholds_of(params):
    """The thresholds the options give, as the verdict and the record take them."""
    return dict(min_top1_agreement=params['min_top1_agreement'],
                max_mean_abs_logprob_diff=params['max_mean_abs_logprob_diff'],
                min_first_divergence=params['min_first_divergence'])


def option_problems(params):
    """``(problems, record path)``: what is wrong with the numbers and the digests, each naming its option, and the
    candidate's quality record (None without candidate_digest, or when anything is wrong)."""
    problems = _agreement.threshold_problems(max_tokens=params['max_tokens'], request_timeout=params['request_timeout'],
                                             **thresholds_of(params))
    for option in ('candidate_digest', 'reference_digest'):
        if params[option] is not None and not _agreement.DIGEST.match(params[option]):
            problems.append('%s must be a SHA-256 (64 lowercase hex digits), the manifest_sha256 that model_manifest '
                            'returns, not %r' % (option, params[option]))
    path = None
    if params['candidate_digest'] is not None and not problems:
        path = _agreement.record_path(params['candidate_digest'], params['record_dir'])
    return problems, path


def endpoints(params):
    """{side: (base URL, served model name, key)}, each URL checked; AgreementError naming ``<side>.url``."""
    found = {}
    for side in _agreement.SIDES:
        given = params[side]
        try:
            url = base_url(given['url'])
        except ValueError as error:
            raise _agreement.AgreementError('%s.%s' % (side, error))
        found[side] = (url, given['served_model_name'], given['api_key'] or None)
    return found


def prompts_of(params, read=read_regular_file):
    """The prompts: of prompts_file (read by ``read``, _files.read_regular_file's signature), else of prompts, else
    the defaults. AgreementError naming the option; UnreadableFile from ``read``."""
    if params['prompts_file']:
        data = read(params['prompts_file'], PROMPTS_MAX_BYTES, 'a prompts file')
        if data is None:
            raise _agreement.AgreementError('prompts_file %s does not exist' % params['prompts_file'])
        return _agreement.read_prompts(data.decode('utf-8', 'replace'), 'prompts_file %s' % params['prompts_file'])
    return _agreement.check_prompts(params['prompts'] or list(_agreement.DEFAULT_PROMPTS), 'prompts')


def sender(found, timeout, post=request):
    """send(side, body) for _agreement.compare: one POST (``post``, _vllm_endpoint.request's signature) to the side's
    /v1/completions, its JSON document; AgreementError naming the side, its key masked."""

    def send(side, body):
        url, model, key = found[side]
        headers = {'Authorization': 'Bearer ' + key} if key else {}
        try:
            response = post(url + '/v1/completions', 'POST', headers, dict(body, model=model), timeout)
        except NotYet as error:
            raise _agreement.AgreementError('%s: %s' % (side, mask(str(error), key)))
        if response.status != 200:
            raise _agreement.AgreementError('%s (%s): %s' % (side, model, mask(answered(response), key)))
        try:
            return _json.loads(response.body)
        except ValueError as error:
            raise _agreement.AgreementError('%s: %s answered 200 but not with JSON (%s)' % (side, response.url, error))
    return send


def result_of(compared, measures, thresholds, path, seconds):
    """RV(agreement) of the module: the verdict over ``measures``, each prompt's kept entries, the record's path."""
    status, failures = _agreement.verdict(measures, **thresholds)
    per_prompt = [dict((key, item[key]) for key in PER_PROMPT_KEYS) for item in compared]
    return dict(status=status, failures=failures, measures=measures, thresholds=thresholds, per_prompt=per_prompt,
                record=path, seconds=seconds)


def record_text_of(params, found, prompts, result):
    """The text of the candidate's quality record for the module's ``result`` (result_of's); AgreementError from
    _agreement.record_text."""
    sides = dict((side, {'url': found[side][0], 'served_model_name': found[side][1]}) for side in _agreement.SIDES)
    sides['reference']['digest'] = params['reference_digest']
    sides['candidate']['digest'] = params['candidate_digest']
    applied = dict(result['thresholds'], max_tokens=params['max_tokens'], prompts=len(prompts))
    return _agreement.record_text(_agreement.record_of(
        params['candidate_digest'], result['status'], result['failures'], result['measures'], applied,
        sides['reference'], sides['candidate']))


def _write_record(module, path, text):
    """(changed, diff) of the quality record ``path`` made to hold ``text``; written unless in check mode."""
    try:
        before = read_regular_file(path, _agreement.MAX_RECORD_BYTES, 'a quality record')
    except UnreadableFile as error:
        module.fail_json(msg='the quality record %s' % error)
    before = before.decode('utf-8', 'replace') if before is not None else ''
    changed = before != text
    if changed and not module.check_mode:
        try:
            write_atomically(module, path, text.encode('utf-8'))
        except OSError as error:
            module.fail_json(msg='the quality record %s could not be written: %s (record_dir)' % (path, error))
    return changed, dict(before=before, after=text)


def run(module, clock=time.monotonic):
    """Everything module vllm_model_agreement does after its options are parsed; what it exits with (``changed``,
    ``agreement``, and ``diff`` in diff mode with a record). Fails the module naming the option to fix."""
    params = module.params
    # A password in an endpoint's URL (refused below) is masked by Ansible everywhere, the invocation included.
    for side in _agreement.SIDES:
        module.no_log_values.update(url_secrets(params[side]['url']))
    problems, path = option_problems(params)
    if problems:
        module.fail_json(msg='; '.join(problems))
    try:
        found = endpoints(params)
        prompts = prompts_of(params)
    except UnreadableFile as error:
        module.fail_json(msg='prompts_file %s' % error)
    except _agreement.AgreementError as error:
        module.fail_json(msg=error.msg)

    started = clock()
    try:
        compared = _agreement.compare(prompts, params['max_tokens'], sender(found, params['request_timeout']))
        measures = _agreement.summarize(compared)
    except _agreement.AgreementError as error:
        module.fail_json(msg='the agreement check could not run: %s' % error.msg)
    result = result_of(compared, measures, thresholds_of(params), path, round(clock() - started, 3))
    if not path:
        return dict(changed=False, agreement=result)
    try:
        text = record_text_of(params, found, prompts, result)
    except _agreement.AgreementError as error:
        module.fail_json(msg='the quality record %s: %s' % (path, error.msg))
    changed, diff = _write_record(module, path, text)
    if module._diff:
        return dict(changed=changed, agreement=result, diff=diff)
    return dict(changed=changed, agreement=result)
