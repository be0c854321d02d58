# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""model_format_info's main() on scratch model directories (it runs no command and only reads two files)."""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.modules import model_format_info
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture, make_tree, run_main


def test_reads_an_msmodelslim_description_with_comments_and_warns(fake_host, tmp_path):
    path = make_tree(tmp_path / 'model', {
        'config.json': '{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}\n',
        'quant_model_description.json':
            load_fixture('quant_msmodelslim-doc_quant_model_description_W8A8S_hash-comments.txt'),
        'model.safetensors': 'w' * 64,
    })
    result = run_main(model_format_info.main, {'path': path})
    found = result['model_format']
    assert (result['changed'], found['format'], found['model_quant_type'], found['quant_types'],
            found['description_file'], found['architectures']) == \
        (False, 'ascend', 'W8A8S', ['W8A8S'], True, ['LlamaForCausalLM'])
    assert len(fake_host.warnings()) == 1 and 'not strict JSON' in fake_host.warnings()[0]


def test_a_missing_directory_is_a_result_not_a_failure(fake_host, tmp_path):
    result = run_main(model_format_info.main, {'path': str(tmp_path / 'absent'), '_ansible_check_mode': True})
    assert (result['changed'], result['model_format']['exists'], result['model_format']['config_found']) == \
        (False, False, False)


def test_returns_config_json_and_the_weights_size_for_the_sizing(fake_host, tmp_path):
    path = make_tree(tmp_path / 'model', {
        'config.json': '{"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168}\n',
        'model.safetensors.index.json': '{"metadata": {"total_size": 688586727753}, "weight_map": {}}',
        'model-00001-of-00002.safetensors': 'w' * 64,
        'model-00002-of-00002.safetensors': 'w' * 36,
        'tokenizer.json': '{}',
    })
    result = run_main(model_format_info.main, {'path': path, '_ansible_check_mode': True})
    assert result['config'] == {'architectures': ['DeepseekV3ForCausalLM'], 'model_type': 'deepseek_v3', 'hidden_size': 7168}
    assert result['weights'] == {'index_total_size': 688586727753, 'file_bytes': 100}
    assert result['model_format']['format'] == 'float' and fake_host.warnings() == []


def test_a_model_that_says_too_little_is_warnings_never_a_failure(fake_host, tmp_path):
    path = make_tree(tmp_path / 'model', {'config.json': '[1, 2]', 'model.safetensors.index.json': '{"metadata": {}}'})
    result = run_main(model_format_info.main, {'path': path})
    assert (result['config'], result['weights']) == (None, {'index_total_size': None, 'file_bytes': None})
    assert any('holds a JSON list, not an object' in warning for warning in fake_host.warnings())
    assert any('no usable metadata.total_size' in warning for warning in fake_host.warnings())
    absent = run_main(model_format_info.main, {'path': str(tmp_path / 'absent')})
    assert (absent['config'], absent['weights']) == (None, None)
