# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The catalogue of known vLLM / vllm-ascend / torch_npu serving failures, as data, and a matcher whose work is linear
in its input. Standard library only.

An entry of ``CATALOGUE`` is a dict:

* ``id``: snake_case name of the failure; ``status``: ``fail`` or ``warn``;
* ``cause``: one sentence; ``fix``: what the operator does, naming this collection's variables;
* ``patterns``: the spellings seen in real logs, each a tuple of tokens that must ALL occur in one line (in any
  order). A token is a plain string, found case-insensitively anywhere in the line, or ``word(text)``, found
  case-insensitively where the characters on both sides of it are not letters, digits or ``_`` (error codes such
  as EJ0001 or 507014: not inside 5070140 or AEJ0001);
* ``not_this``: lines that look alike but are not this failure, each a dict with the ``line`` (an example),
  ``why``, its ``source`` and, optionally, ``tokens``: a line holding all of them is not this entry, whatever its
  patterns say;
* ``sources``: the samples it was learned from (file names under tests/fixtures/) and public issue URLs.

``match_line(line)`` gives the first entry, in catalogue order, that a line matches (specific entries come before
the generic ones, such as engine_core_failed, torch_npu_error and cann_inner_error, which say only that a known
layer failed); ``scan(lines)`` counts the entries over many lines and keeps the last matching lines of each.

No regular expression is used. A line is cut to ``MAX_LINE_CHARS`` characters (bytes: decoded as UTF-8, undecodable
bytes replaced, never an exception) and lowercased once; then each distinct token is looked for at most once per
line with ``str.find``. A word token whose occurrence has a letter or digit beside it is looked for again after that
occurrence: from its end when the token is made of letters, digits and ``_`` only (an overlapping occurrence would
have a token character before it), else from its smallest period (no occurrence can start closer); the catalogue's
rules (tests) make sure the two are the same, so the stretches of line the calls of one token read never overlap.
So the work of one line is at most ``1 + 3 n + T (2 n + 1)`` steps for ``n`` characters (after the cut) and ``T``
distinct tokens, and ``Steps`` counts it: each ``find`` call counts the characters from where it starts to the end
of what it found (or to the end of the line) plus one, and cutting, lowercasing and keeping a line count their
characters.
"""

from __future__ import annotations

import collections

# A line is cut to this many characters before it is matched (a journal line longer than this is a dump, not a
# message; the known messages are all far shorter).
MAX_LINE_CHARS = 4096
# scan() keeps at most this many matching lines of each entry (the last ones), each cut to LINE_CHARS characters.
LINES_PER_KIND = 3
LINE_CHARS = 300
STATUSES = ('fail', 'warn')

Token = collections.namedtuple('Token', 'text word')


def word(text):
    """A token found only where neither neighbour is a letter, a digit or ``_``."""
    return Token(text, True)


class Steps:
    """A counter of the matcher's elementary steps (see the module docstring)."""

    def __init__(self):
        self.count = 0


F = 'tests/fixtures/'
HCCL_EXEC_TIMEOUT_SOURCE = ('constructed from the text torch_npu prints (TORCH_NPU_WARN in '
                            'torch_npu/csrc/distributed/ProcessGroupHCCL.cpp, Ascend/pytorch): no sample has it')

# HCCL's own fault-diagnosis guide (hicann/hccl): the log lines HCCL prints for a port already bound and for a link
# never set up, with their causes.
HCCL_PARAM_LINK_DOC = ('https://github.com/hicann/hccl/blob/7076f76a733493cd2fc8b5521aad8703f2488f19/docs/en/user_guide/'
                       'fault_diagnosis/param_link_stage.md')
HCCL_CLUSTER_NEGO_DOC = ('https://github.com/hicann/hccl/blob/bf07f6e5c76b263f36264e439f29c6a0581cae1e/docs/en/user_guide/'
                         'fault_diagnosis/cluster_info_nego.md')
# The driver's error numbers: 87 is DRV_ERROR_RESOURCE_OCCUPIED.
DRIVER_ERRORS = ('https://github.com/hicann/runtime/blob/d8beaaf0955bc307cdda0ae971275fb48f652a26/include/driver/'
                 'ascend_hal_error.h')

CATALOGUE = (
    {
        'id': 'ej0001',
        'status': 'fail',
        'cause': 'EJ0001: the HCCP process of an NPU could not start, because another process (an earlier run of the '
                 'service, a training job, another container) still holds the NPU or it failed to initialise.',
        'fix': 'EJ0001: stop the process holding the NPU (see the npu_processes check, `npu-smi info`; wait 10 s after '
               'killing it) or give the service other NPUs with vllm_service_npus, then restart the service',
        'patterns': (
            (word('EJ0001'),),
            ('failed to initialize the hccp process',),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_vllm-ascend-2546_EJ0001_ERR02200.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/2546'),
    },
    {
        'id': 'npu_in_use',
        'status': 'fail',
        'cause': 'The NPU driver reports the device as used by someone else (dcmi -8020 "the device is used"): '
                 'another container or process holds the NPU.',
        'fix': 'Find what holds the NPU (`npu-smi info` on the host, the npu_processes check, other containers '
               'started with the same /dev/davinciN) and stop it, or give the service other NPUs with vllm_service_npus',
        'patterns': (
            ('because the device is used',),
            ('dcmi', word('-8020')),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_vllm-ascend-632_dcmi-8020-device-is-used.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/632'),
    },
    {
        'id': 'npu_occupied',
        'status': 'fail',
        'cause': 'The NPU driver refused the service\'s queries of the device type and SoC version because the NPU is '
                 'occupied (EL0005 "The resources are busy"; "halGetDeviceInfo get device type version failed , ret:87", '
                 'driver error 87 being DRV_ERROR_RESOURCE_OCCUPIED; "init soc version failed, ret = 507008"): another '
                 'container or process holds it, as when a second service is started on a card (a 300I chip) that a '
                 'first service in another container already uses.',
        'fix': 'Run one service per NPU: give each service its own NPUs with vllm_service_npus (each chip of a 300I Duo '
               'is one), or stop the container or process that holds this one (the npu_processes check; `npu-smi info` '
               'lists the processes of each chip; an earlier run of this service: wait 10 s after it ends); then restart '
               'the service',
        'patterns': (
            (word('EL0005'),),
            ('the resources are busy',),
            ('get device type version failed', word('87')),
            ('init soc version failed', word('507008')),
        ),
        'not_this': (
            {'line': '(EngineCore_DP0 pid=626)   File "/vllm-workspace/vllm-ascend/vllm_ascend/utils.py", line 564, in '
                     'init_ascend_soc_version',
             'why': 'a frame of the traceback of another failure (AclSetCompileopt 500001: cann_version_mismatch) that '
                    'passes through vllm-ascend\'s SoC-version lookup: the driver answered, nothing is occupied',
             'source': F + 'serve-log_vllm-ascend-4744_AclSetCompileopt-500001.txt'},
        ),
        'sources': (F + 'serve-log_vllm-ascend-2542_310P-second-service_halGetDeviceInfo-ret87_soc-version-507008.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/2542',
                    DRIVER_ERRORS),
    },
    {
        'id': 'dcmi_error',
        'status': 'fail',
        'cause': 'npu-smi could not open the driver\'s management interface (dcmi): ret -8005 means the user is not '
                 'in group HwHiAiUser (or the driver was upgraded without a reboot); other codes point to the driver.',
        'fix': 'Add the user to HwHiAiUser (`usermod -aG HwHiAiUser USER`; vllm_service_user for the native service) '
               'and log in again, or reboot after a driver upgrade; if `npu-smi info` fails as root on the host too, '
               'reinstall the driver (role kunpeng_ascend.vllm.npu_driver)',
        'patterns': (
            ('dcmi module initialize failed',),
            ('dcmi model initialized failed',),
            ('dcmi', word('-8005')),
        ),
        'not_this': (),
        'sources': (F + 'npu-smi-error_dcmi-8005_user-not-in-HwHiAiUser.txt',),
    },
    {
        'id': 'driver_libraries_missing',
        'status': 'fail',
        'cause': 'A library of the NPU driver cannot be loaded where the service runs (libascend_hal.so, libc_sec.so, '
                 'libdcmi.so: cannot open shared object file), so npu-smi and torch_npu do not start: the container '
                 'lacks the driver mounts, or the driver is not installed.',
        'fix': 'In container mode let vllm_service mount the driver (the Ascend Docker Runtime with '
               'vllm_service_use_ascend_runtime, or the driver mounts; vllm_service_mount_driver_dir: true on the 950 '
               'series; no entry of vllm_service_volumes over /usr/local/Ascend/driver) and re-run playbooks/site.yml; '
               'natively install the driver (role kunpeng_ascend.vllm.npu_driver)',
        'patterns': (
            ('libascend_hal', 'cannot open shared object'),
            ('libc_sec', 'cannot open shared object'),
            ('libdcmi', 'cannot open shared object'),
            ('libdrvdsmi', 'cannot open shared object'),
            ('failed to load the backend extension', 'torch_npu'),
        ),
        'not_this': (
            {'line': "WARNING 05-07 05:58:43 _custom_ops.py:21] Failed to import from vllm._C with ImportError("
                     "'libnuma.so.1: cannot open shared object file: No such file or directory')",
             'why': 'vllm._C holds vLLM\'s CUDA kernels, which vllm-ascend does not use: a warning at every start, '
                    'not a missing driver library',
             'source': F + 'serve-log_vllm-ascend-780_Torch-not-compiled-with-CUDA.txt',
             'tokens': ('failed to import from vllm._c',)},
        ),
        'sources': (F + 'serve-log_hami-615_npu-smi-libc_sec.so-missing.txt',
                    'https://github.com/Project-HAMi/HAMi/issues/615'),
    },
    {
        'id': 'npu_not_visible',
        'status': 'fail',
        'cause': 'The Ascend runtime finds no usable NPU (rtGetDeviceCount 507899, halGetDeviceInfo drvRet 87, "drv '
                 'devId is invalid"): no /dev/davinci device in the container, the driver not loaded, or an image '
                 'built for another chip or driver.',
        'fix': 'Run `npu-smi info` on the host; check the NPUs given to the container (vllm_service_npus, '
               'vllm_service_use_ascend_runtime) and that vllm_service_image is the build for this chip (the -310p '
               'image on a 310P) and fits the driver (see the versions check)',
        'patterns': (
            (word('507899'),),
            ('get device count of npu failed',),
            ('drv devid is invalid',),
            ('halgetdeviceinfo failed',),
            ('cur soc version', 'not found'),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_vllm-ascend-13399_310P3_rtGetDeviceCount-507899.txt',
                    F + 'serve-log_vllm-ascend-632_dcmi-8020-device-is-used.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/13399'),
    },
    {
        'id': 'set_device_failed',
        'status': 'fail',
        'cause': 'torch_npu could not select its NPU (SetDevice error 107001 or 507033, "Invalid device ID", EE1001 '
                 '"Set visible device failed"): a rank asks for a device the process does not see, as when '
                 'ASCEND_RT_VISIBLE_DEVICES shows fewer NPUs than there are ranks.',
        'fix': 'Make vllm_service_npus list the NPUs of the service, as many as vllm_service_tensor_parallel_size '
               'times the data-parallel ranks of the node, and do not set ASCEND_RT_VISIBLE_DEVICES or '
               'ASCEND_VISIBLE_DEVICES in vllm_service_env; `npu-smi info` on the host must show them',
        'patterns': (
            ('setdevice', 'error code'),
            ('invalid device id',),
            (word('EE1001'),),
            ('set visible device failed',),
            (word('107001'),),
            (word('507033'),),
            ('rtsetdevice', 'failed'),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_vllm-17363_SetDevice-107001_EE1001-invalid-device.txt',
                    F + 'serve-log_vllm-ascend-4284_SetDevice-507033_E30006-OPP.txt',
                    'https://github.com/vllm-project/vllm/issues/17363'),
    },
    {
        'id': 'npu_device_start_failed',
        'status': 'fail',
        'cause': 'The Ascend runtime could not start an NPU (TsdOpen failed, "Failed to start the device", tsd client '
                 'wait response fail): the device side did not answer, because the NPU is held by another process or '
                 'container, was not released by a crashed run, or its CANN and firmware do not fit.',
        'fix': 'Stop what holds the NPU (the npu_processes check, `npu-smi info`; wait 10 s after killing an earlier '
               'run), check the versions check (driver, firmware, CANN), reset a stuck NPU (`npu-smi set -t reset -i '
               'N -c 0`) and give the service other NPUs with vllm_service_npus meanwhile',
        'patterns': (
            ('tsdopen failed',),
            ('failed to start the device',),
            ('tsd client wait response fail',),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_vime-434_TsdOpen-failed_Failed-to-start-the-device.txt',
                    F + 'serve-log_vllm-ascend-4284_SetDevice-507033_E30006-OPP.txt',
                    'https://github.com/vllm-project/vime/issues/434'),
    },
    {
        'id': 'cann_version_mismatch',
        'status': 'fail',
        'cause': 'torch_npu, the CANN toolkit, its operator package or NNAL/ATB and the driver are of releases that do '
                 'not fit (undefined symbol in libtorch_npu or libtbe_adapter, E30006 "Failed to verify the OPP", '
                 'AclSetCompileopt 500001).',
        'fix': 'Use the vllm-ascend image of the release row that fits the driver (vllm_service_image; the versions '
               'check names it) without a host CANN mounted over it; natively install the CANN and NNAL of that row '
               '(role kunpeng_ascend.vllm.cann, cann_version) and the torch_npu it pins (vllm_service_pip_packages)',
        'patterns': (
            ('undefined symbol', 'torch_npu'),
            ('undefined symbol', 'libtbe_adapter'),
            ('undefined symbol', '/ascend/'),
            (word('E30006'),),
            ('failed to verify the opp',),
            ('aclsetcompileopt', word('500001')),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_ascend-pytorch-99_libtbe_adapter-undefined-symbol.txt',
                    F + 'serve-log_vllm-ascend-117_libtorch_npu-undefined-symbol.txt',
                    F + 'serve-log_vllm-ascend-4284_SetDevice-507033_E30006-OPP.txt',
                    F + 'serve-log_vllm-ascend-4744_AclSetCompileopt-500001.txt',
                    'https://github.com/Ascend/pytorch/issues/99',
                    'https://github.com/vllm-project/vllm-ascend/issues/4284'),
    },
    {
        'id': 'hccl_port_in_use',
        'status': 'fail',
        'cause': 'HCCL could not listen on its port ("socket type[N], listen on ip[...] and specific port[16666] fail. '
                 'Please check the port status and whether the port is being used by other process", EI0019 '
                 'Communication_Error_Bind_IP_Port): another process holds it - a second service or a stale run on the '
                 'same NPU (port 16666 of the NPU\'s NIC, socket type 0 or 1) or on the host (ports 60000-60031, socket '
                 'type 2) - or, after EJ0002, the NPU\'s network port is down; the ranks that wait for this one then time '
                 'out.',
        'fix': 'Give each service its own NPUs (vllm_service_npus) and stop what still holds the port: an earlier run of '
               'the service or another service on the same NPUs (the npu_processes check; `ss -ltnp \'sport = :PORT\'` '
               'for a host port); to run several HCCL processes on one NPU on purpose, set HCCL_NPU_SOCKET_PORT_RANGE: '
               '"auto" (and HCCL_HOST_SOCKET_PORT_RANGE: "auto" for socket type 2) in vllm_service_env; when EJ0002 came '
               'first, bring the NPU link up (`hccn_tool -i N -link -g`; the doctor with doctor_check_network: true); '
               'then restart the service',
        'patterns': (
            ('please check the port status', 'by other process'),
            ('listen on ip', 'specific port', 'fail'),
            (word('EI0019'),),
        ),
        'not_this': (
            {'line': "vllm-eb_1  | ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): "
                     "address already in use",
             'why': 'vLLM\'s API server (uvicorn) not getting its HTTP port: port_in_use, fixed with vllm_service_port',
             'source': F + 'serve-log_vllm-8638_Errno98-address-already-in-use.txt'},
        ),
        'sources': (F + 'serve-log_vllm-ascend-1955_HCCL-listen-16666-fail_wait-socket-establish-timeout.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/1955',
                    'https://github.com/vllm-project/vllm-ascend/issues/1815',
                    HCCL_PARAM_LINK_DOC,
                    HCCL_CLUSTER_NEGO_DOC),
    },
    {
        'id': 'hccl_init_failed',
        'status': 'fail',
        'cause': 'The HCCL communicator between the NPUs could not be set up (HcclCommInitRootInfo failed, errNo, '
                 'ERR02200, EI0009 transport init error): a rank cannot reach another, an NPU is held elsewhere, or '
                 'the NPU network is down.',
        'fix': 'Check the NPU network (`hccn_tool -i N -link -g`, `-net_health -g`; the doctor with '
               'doctor_check_network: true), that no other process holds the NPUs (npu_processes check), that '
               'vllm_service_npus gives every rank of vllm_service_tensor_parallel_size an NPU, and the first EJ/EI '
               'code above the line; then restart the service',
        'patterns': (
            ('hcclcomminitrootinfo', 'fail'),
            ('hcclcomminitrootinfo', 'error code'),
            (word('ERR02200'),),
            (word('EI0009'),),
            ('transport init error',),
            ('hcclcomm is null',),
            ('get hccl comm fail',),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_gpustack-2021_HcclCommInitRootInfo-failed.txt',
                    F + 'serve-log_vllm-ascend-2546_EJ0001_ERR02200.txt',
                    F + 'serve-log_vllm-ascend-3162_EI0009-transport-init-error.txt',
                    'https://github.com/gpustack/gpustack/issues/2021',
                    'https://github.com/vllm-project/vllm-ascend/issues/3162'),
    },
    {
        'id': 'hccl_timeout',
        'status': 'fail',
        'cause': 'An HCCL or c10d connection or collective timed out (EI0006 "Getting socket times out", EI0002 Notify '
                 'wait, c10d client socket timed out): a rank or node did not come up or cannot reach the others, or '
                 'one rank is stuck.',
        'fix': 'HCCL collectives timed out: check the NPU network (`hccn_tool -i N -link -g`, `-net_health -g`; run the '
               'doctor with doctor_check_network: true), that every rank and node started, and raise '
               'HCCL_CONNECT_TIMEOUT / HCCL_EXEC_TIMEOUT in vllm_service_env (vllm_cluster_hccl_connect_timeout across '
               'nodes) if the model only loads slowly',
        'patterns': (
            (word('EI0006'),),
            ('getting socket times out',),
            (word('EI0002'),),
            ('notify register times out',),
            ('[c10d]', 'socket', 'has timed out'),
            ('watchdog caught collective operation timeout',),
        ),
        'not_this': (
            {'line': '(EngineCore_DP0 pid=1096) (RayWorkerWrapper pid=545, ip=10.17.44.60) [W116 05:41:45.632092587 '
                     'socket.cpp:929] [c10d] The server socket on [::ffff:198.18.0.1]:43195 has timed out, will retry.',
             'why': 'the server side of the c10d rendezvous waits for its peers and tries again: c10d_rendezvous_waiting '
                    '(a warning); the client giving up is the failure',
             'source': F + 'serve-log_vllm-ascend-5949_c10d-server-socket-will-retry.txt',
             'tokens': ('will retry',)},
            {'line': '[rank0]:[W1015 16:32:16.549993460 compiler_depend.ts:1041] Warning: The watchdog timeout 600000ms'
                     '(which is set by init_process_group) is less than or equal to HCCL execution timeout 1836000ms! '
                     'The plog may not be recorded. (function ProcessGroupHCCL)',
             'why': 'torch_npu\'s start-up warning about the HCCL execution-timeout setting (HCCL_EXEC_TIMEOUT against '
                    'the watchdog): nothing timed out',
             'source': HCCL_EXEC_TIMEOUT_SOURCE,
             'tokens': ('hccl execution timeout', 'watchdog timeout')},
            {'line': '[rank0]:[W1015 16:32:16.549993460 compiler_depend.ts:1045] Warning: The HCCL execution timeout was '
                     'set to 0(never timeout), so it is bigger than watchdog timeout 600000ms which is set by '
                     'init_process_group! The plog may not be recorded. You can disable watchdog by \'export '
                     'HCCL_ASYNC_ERROR_HANDLING=0\'. (function ProcessGroupHCCL)',
             'why': 'the same start-up warning for HCCL_EXEC_TIMEOUT=0: nothing timed out',
             'source': HCCL_EXEC_TIMEOUT_SOURCE,
             'tokens': ('hccl execution timeout', 'watchdog timeout')},
        ),
        'sources': (F + 'serve-log_llamafactory-5071_EI0006-getting-socket-times-out.txt',
                    F + 'serve-log_verl-849_c10d-client-socket-timed-out.txt',
                    'https://github.com/hiyouga/LlamaFactory/issues/5071',
                    'https://github.com/verl-project/verl/issues/849',
                    'https://github.com/vllm-project/vllm-ascend/issues/1443'),
    },
    {
        'id': 'hccl_socket_timeout',
        'status': 'fail',
        'cause': 'HCCL\'s socket to another rank was not set up within HCCL_CONNECT_TIMEOUT ("wait socket establish '
                 'timeout, role[R] rank[N] timeout[120]", "topo exchange agent/server get socket timeout"): the rank it '
                 'waited for never connected - it did not start, failed first (its own log names why, as a listen port '
                 'in use), started later than the timeout, or cannot be reached over the NPU or host network.',
        'fix': 'Read the log of the rank named in the line first (on its node) and fix its error; check that every rank '
               'and node started (playbooks/site.yml, role kunpeng_ascend.vllm.vllm_cluster), that HCCL_IF_IP and '
               'HCCL_SOCKET_IFNAME name the node\'s own NIC (vllm_cluster_node_address), that no firewall blocks the '
               'nodes\' ports, and the NPU network (`hccn_tool -i N -link -g`, `-net_health -g`, the same TLS switch on '
               'every NPU: `hccn_tool -i N -tls -g`; the doctor with doctor_check_network: true); raise '
               'HCCL_CONNECT_TIMEOUT (vllm_cluster_hccl_connect_timeout, or in vllm_service_env) when a rank only '
               'starts slowly',
        'patterns': (
            ('wait socket establish timeout',),
            ('topo exchange', 'get socket timeout'),
        ),
        'not_this': (
            {'line': 'EI0006: 2024-08-05-18:15:21.270.506 Getting socket times out. Reason: Remote Rank did not send '
                     'the data in time. Please check the reason for the rank being stuck',
             'why': 'the error code torch_npu\'s exception reports for an HCCL timeout, of a link or of the data of a '
                    'collective: hccl_timeout, which says so; this entry is HCCL\'s own log line of a link never set up',
             'source': F + 'serve-log_llamafactory-5071_EI0006-getting-socket-times-out.txt'},
        ),
        'sources': (F + 'serve-log_vllm-ascend-1955_HCCL-listen-16666-fail_wait-socket-establish-timeout.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/1955',
                    HCCL_PARAM_LINK_DOC,
                    HCCL_CLUSTER_NEGO_DOC),
    },
    {
        'id': 'c10d_rendezvous_waiting',
        'status': 'warn',
        'cause': 'A rank waits at the torch c10d rendezvous for peers that have not connected ("server socket ... has '
                 'timed out, will retry"): normal for a moment while other nodes start, a hang when it repeats.',
        'fix': 'Start the service on every node (playbooks/site.yml, role kunpeng_ascend.vllm.vllm_cluster); check that '
               'the address in the line is a node address the others reach (vllm_cluster_node_address, not a proxy or '
               '198.18.x address) and that its port is not firewalled',
        'patterns': (
            ('c10d', 'has timed out, will retry'),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_vllm-ascend-5949_c10d-server-socket-will-retry.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/5949'),
    },
    {
        'id': 'c10d_store_timeout',
        'status': 'fail',
        'cause': 'The ranks\' torch c10d store client waited for an answer of the rendezvous store (the TCPStore at '
                 'remote=..., on the head node) and gave up ("[c10d] waitForInput: socket SocketImpl(...) timed out after '
                 '1800000ms", 30 minutes by default, printed by every rank): the store waits for a rank or node that '
                 'never joined, or a rank crashed or hangs before the group was set up.',
        'fix': 'Find the first rank that failed: read the log of every node, the head first, from about the timeout '
               'before the line, and fix that error; check that the service started on every node (playbooks/site.yml, '
               'role kunpeng_ascend.vllm.vllm_cluster), that the remote= address is the head\'s '
               'vllm_cluster_node_address (not a proxy, container or 198.18.x address) and its port is not firewalled; '
               'then restart the service on every node, the head first',
        'patterns': (
            ('waitforinput', 'timed out after'),
        ),
        'not_this': (
            {'line': '(EngineCore_DP0 pid=1096) (RayWorkerWrapper pid=545, ip=10.17.44.60) [W116 05:41:45.632092587 '
                     'socket.cpp:929] [c10d] The server socket on [::ffff:198.18.0.1]:43195 has timed out, will retry.',
             'why': 'the server side of the rendezvous still waiting and trying again: c10d_rendezvous_waiting (a warning)',
             'source': F + 'serve-log_vllm-ascend-5949_c10d-server-socket-will-retry.txt'},
            {'line': '(WorkerDict pid=904548) [E331 20:50:12.688969421 socket.cpp:1011] [c10d] The client socket has '
                     'timed out after 1800000ms while trying to connect to (10.123.132.218, 38321).',
             'why': 'the client never reached the store at all (nothing listened there): hccl_timeout\'s c10d connect '
                    'timeout; this entry is a client connected to the store that got no answer',
             'source': F + 'serve-log_verl-849_c10d-client-socket-timed-out.txt'},
        ),
        'sources': (F + 'serve-log_vllm-ascend-2248_c10d-waitForInput-timed-out-every-rank.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/2248',
                    'https://github.com/vllm-project/vllm/pull/10502'),
    },
    {
        'id': 'hccl_watchdog_abort',
        'status': 'fail',
        'cause': 'torch_npu\'s HCCL watchdog aborted the process after a collective failed (ERR02005 DIST internal '
                 'error); the device or HCCL error logged before it is the cause.',
        'fix': 'Fix the error logged just before it (an aicore timeout, an HCCL timeout, a device error: the other '
               'kinds of this finding name it), then restart the service',
        'patterns': (
            ('hccl watchdog thread terminated',),
            (word('ERR02005'),),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_sglang-30453_aicore-timeout-507014_HCCL-watchdog.txt',
                    'https://github.com/sgl-project/sglang/issues/30453'),
    },
    {
        'id': 'aicore_timeout',
        'status': 'fail',
        'cause': 'An NPU kernel ran past the AI Core or vector core execution timeout (EZ9999 "aicore timeout", 507014, '
                 '507034): an operator hung on the device, usually an operator bug for this model and shape, or a '
                 'stuck peer in a collective.',
        'fix': 'Restart the service; if it comes back, move to the release row the versions check names '
               '(vllm_service_image), try vllm_service_enforce_eager: true (no graph mode), and report the model, the '
               'request shapes and the plog (~/ascend/log of the service\'s user) to vllm-ascend',
        'patterns': (
            ('aicore timeout',),
            ('aicore execution times out',),
            (word('507014'),),
            ('vector core execution timed out',),
            ('vector core timeout',),
            (word('507034'),),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_sglang-30453_aicore-timeout-507014_HCCL-watchdog.txt',
                    'https://github.com/sgl-project/sglang/issues/30453',
                    'https://github.com/vllm-project/vllm-ascend/issues/10299'),
    },
    {
        'id': 'out_of_memory',
        'status': 'fail',
        'cause': 'Memory ran out: NPU HBM ("NPU out of memory", EL0004 "Failed to allocate memory") or host RAM (the '
                 'kernel\'s OOM killer).',
        'fix': 'Out of memory: lower vllm_service_gpu_memory_utilization, vllm_service_max_model_len or '
               'vllm_service_max_num_seqs (or raise vllm_service_tensor_parallel_size), then re-run playbooks/site.yml; '
               'when PyTorch had allocated far less than the NPU\'s total capacity, another process holds the HBM (the '
               'npu_processes check; vllm_service_npus); an OOM kill of the host needs more RAM or fewer services',
        'patterns': (
            ('npu out of memory',),
            ('outofmemoryerror',),
            (word('EL0004'),),
            ('killed by the oom killer',),
            ('oom-kill',),
            ('out of memory: kill',),
        ),
        'not_this': (
            {'line': '(EngineCore pid=16396) WARNING 07-22 05:11:10 [platform.py:394]             * (Out of Memory) '
                     'errors or inference hangs. If you encounter such issues,',
             'why': 'vllm-ascend\'s warning about graph capture, printed at every start with FULL_DECODE_ONLY: nothing '
                    'ran out',
             'source': F + 'serve-log_vllm-ascend-pr12609_startup-SUCCESS_from-GB18030.txt',
             'tokens': ('(out of memory) errors',)},
            {'line': '(EngineCore pid=16396) WARNING 07-22 05:11:10 [platform.py:394]             * A known problem is '
                     'that capturing too many batch sizes can lead to OOM',
             'why': 'the line before it in the same warning',
             'source': F + 'serve-log_vllm-ascend-pr12609_startup-SUCCESS_from-GB18030.txt'},
            {'line': 'Killed',
             'why': 'the shell\'s word for a process ended by SIGKILL (in the sample after vLLM\'s own fatal-signal '
                    'shutdown), not the OOM killer\'s message',
             'source': F + 'serve-log_vllm-ascend-780_Torch-not-compiled-with-CUDA.txt'},
        ),
        'sources': (F + 'serve-log_vllm-ascend-19_NPU-out-of-memory.txt',
                    F + 'serve-log_vllm-ascend-3479_EngineCore-failed-to-start_EL0004.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/19',
                    'https://github.com/vllm-project/vllm-ascend/issues/3479'),
    },
    {
        'id': 'no_kv_cache_memory',
        'status': 'fail',
        'cause': 'After the weights were loaded too little NPU memory was left for the KV cache ("No available memory '
                 'for the cache blocks", larger than the available KV cache memory): another service holds HBM on the '
                 'same NPU, or vllm_service_gpu_memory_utilization and vllm_service_max_model_len do not fit the model.',
        'fix': 'Give each service its own NPUs (vllm_service_npus; the npu_processes check lists foreign processes), or '
               'raise vllm_service_gpu_memory_utilization, or lower vllm_service_max_model_len; then re-run '
               'playbooks/site.yml',
        'patterns': (
            ('no available memory for the cache blocks',),
            ('larger than the available kv cache memory',),
            ('larger than the maximum number of tokens that can be stored in kv cache',),
            ('less than desired gpu memory utilization',),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_vllm-ascend-5707_no-memory-for-cache-blocks.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/5707'),
    },
    {
        'id': 'port_in_use',
        'status': 'fail',
        'cause': 'The API server could not listen because another process uses the address and port ([Errno 98] '
                 'address already in use), although "Application startup complete" may have been printed before.',
        'fix': 'See what listens (`ss -ltnp \'sport = :PORT\'`) and stop it, or set vllm_service_port to a free port '
               'and re-run playbooks/site.yml',
        'patterns': (
            ('address already in use',),
            ('[errno 98]',),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_vllm-8638_Errno98-address-already-in-use.txt',
                    'https://github.com/vllm-project/vllm/issues/8638'),
    },
    {
        'id': 'quantization_mismatch',
        'status': 'fail',
        'cause': 'The quantization setting and the serving stack do not fit: --quantization ascend on a vLLM that does '
                 'not know it (argparse "invalid choice: \'ascend\'"), or a quantized model the installed vllm-ascend '
                 'cannot load ("There is no available ascend quantizer").',
        'fix': 'Set vllm_service_quantization: ascend only for a model quantized with msModelSlim (it has '
               'quant_model_description.json) and on a vllm-ascend release that supports it (vllm_service_image); '
               'leave it null for an unquantized model; re-run playbooks/site.yml',
        'patterns': (
            ('no available ascend quantizer',),
            ('invalid choice', "'ascend'", 'quantization'),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_vllm-ascend-633_no-available-ascend-quantizer.txt',
                    F + 'serve-log_vllm-ascend-902_invalid-choice-ascend-quantization.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/633',
                    'https://github.com/vllm-project/vllm-ascend/issues/902'),
    },
    {
        'id': 'device_type_unknown',
        'status': 'fail',
        'cause': 'vLLM found no platform for the NPUs ("Failed to infer device type", "No platform detected"): the '
                 'vllm-ascend plugin is not installed in the service\'s Python or failed to load.',
        'fix': 'Use the vllm-ascend image (vllm_service_image) or, natively, install vllm-ascend of the same release as '
               'vllm into vllm_service_venv (vllm_service_pip_packages) and re-run playbooks/site.yml; when the plugin '
               'is there but torch_npu does not load, fix that first (the other kinds of this finding)',
        'patterns': (
            ('failed to infer device type',),
            ("no module named 'vllm_ascend'",),
            ('failed to load plugin ascend',),
            ('no platform detected',),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_vllm-ascend-540_Failed-to-infer-device-type.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/540'),
    },
    {
        'id': 'cuda_path_on_npu',
        'status': 'fail',
        'cause': 'vLLM took a CUDA code path on the NPU host ("Torch not compiled with CUDA enabled"): the vllm and '
                 'vllm-ascend (or MindIE Turbo) releases do not fit each other, so part of vLLM is not patched for the '
                 'NPU.',
        'fix': 'Run a matching pair: the vllm-ascend image of one release (vllm_service_image) or, natively, vllm and '
               'vllm-ascend of the same release in vllm_service_pip_packages (no other plugin unless that release '
               'asks for it); re-run playbooks/site.yml',
        'patterns': (
            ('torch not compiled with cuda enabled',),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_vllm-ascend-780_Torch-not-compiled-with-CUDA.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/780'),
    },
    {
        'id': 'corrupt_weights',
        'status': 'fail',
        'cause': 'A weight file is not a valid safetensors file (SafetensorError HeaderTooLarge, error while '
                 'deserializing header): a Git LFS pointer, a cut download or a damaged copy.',
        'fix': 'Look at the model files (`head -c 200 FILE` shows a Git LFS pointer), download them again into the '
               'model directory, and keep vllm_service_verify_model: true with a SHA256SUMS manifest '
               '(vllm_service_model_manifest) so that a bad copy stops the deployment before the start',
        'patterns': (
            ('safetensorerror',),
            ('error while deserializing header',),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_vllm-ascend-955_SafetensorError-HeaderTooLarge.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/955'),
    },
    {
        'id': 'model_inspection_failed',
        'status': 'fail',
        'cause': 'vLLM could not inspect the model\'s architecture in a subprocess ("Error in inspecting model '
                 'architecture"): the model code failed to import there, from vllm, vllm-ascend and transformers of '
                 'different releases, a model that needs trust_remote_code, or a tracer wrapping the process.',
        'fix': 'Read the subprocess traceback after the line; use packages of one release row (vllm_service_image or '
               'vllm_service_pip_packages), add --trust-remote-code to vllm_service_extra_args if the model needs it, '
               'and do not run the server under a tracer or profiler; re-run playbooks/site.yml',
        'patterns': (
            ('error in inspecting model architecture',),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_omni-infer_model-inspection-failed_from-CRLF.txt',
                    'https://github.com/vllm-project/vllm-ascend/blob/cedf0fa7700c6e1cf6f4df5b640a86c46ed98e42/tools/'
                    'scripts/apiserverlog/server_0.log'),
    },
    {
        'id': 'engine_core_failed',
        'status': 'fail',
        'cause': 'The vLLM engine core failed to start or died ("EngineCore failed to start", "Engine core '
                 'initialization failed", "EngineCore hit an exception", a fatal signal from the workers); the first '
                 'error logged before it is the cause.',
        'fix': 'Read the journal before this line (`journalctl -u UNIT -e`) for the first error (the other kinds of '
               'this finding name the known ones), fix it, then restart the service',
        'patterns': (
            ('enginecore failed to start',),
            ('engine core initialization failed',),
            ('enginecore hit an exception',),
            ('got fatal signal from worker processes',),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_vllm-ascend-3479_EngineCore-failed-to-start_EL0004.txt',
                    F + 'serve-log_vllm-ascend-780_Torch-not-compiled-with-CUDA.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/3479'),
    },
    {
        'id': 'torch_npu_error',
        'status': 'fail',
        'cause': 'A call of torch_npu into CANN failed (ERR00100 "PTA call acl api failed", ERR99999); the error code '
                 'and TraceBack lines around it name the cause.',
        'fix': 'Read the CANN error code (EJ/EI/EE/EL/EZ) and the TraceBack after the line, and the plog '
               '(~/ascend/log of the service\'s user); for an exact stack set ASCEND_LAUNCH_BLOCKING: "1" in '
               'vllm_service_env while debugging (it slows the service down: remove it after)',
        'patterns': (
            (word('ERR00100'),),
            (word('ERR99999'),),
            ('pta call acl api failed',),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_vllm-ascend-1047_ERR00100-PTA-call-acl-api-failed.txt',
                    F + 'serve-log_vllm-ascend-540_Failed-to-infer-device-type.txt',
                    'https://github.com/vllm-project/vllm-ascend/issues/1047'),
    },
    {
        'id': 'cann_inner_error',
        'status': 'fail',
        'cause': 'A CANN component reported an inner error (EE9999, EZ9999, E39999, EI9999 "Inner Error!"); the '
                 'TraceBack lines after it name the failing call.',
        'fix': 'Read the TraceBack lines after it and the plog (~/ascend/log of the service\'s user), check the '
               'versions check (driver, firmware and CANN fit), then restart the service; report an inner error that '
               'comes back to vllm-ascend with the plog',
        'patterns': (
            ('inner error!',),
            (word('EI9999'),),
            (word('EE9999'),),
            (word('EZ9999'),),
            (word('E39999'),),
        ),
        'not_this': (),
        'sources': (F + 'serve-log_vime-434_TsdOpen-failed_Failed-to-start-the-device.txt',
                    F + 'serve-log_sglang-30453_aicore-timeout-507014_HCCL-watchdog.txt'),
    },
    {
        'id': 'nan_inf',
        'status': 'warn',
        'cause': 'nan or inf in what the service computed (a loss, logits, "probability tensor contains either inf, '
                 'nan or element < 0"): a numeric overflow, often fp16 on a model trained in bf16, or a broken '
                 'quantization.',
        'fix': 'nan/inf in the logs: numeric overflow, often fp16 on a model trained in bf16: set vllm_service_dtype: '
               'bfloat16 (or check the quantization, vllm_service_quantization) and re-run playbooks/site.yml',
        'patterns': (
            (word('nan'),),
            (word('inf'),),
        ),
        'not_this': (
            {'line': 'Traffic request rate: inf',
             'why': 'vllm bench serve\'s setting "send every request at once", not a value the model computed',
             'source': F + 'bench_vllm-ascend-pr12609_request-rate-inf_from-GB18030.txt',
             'tokens': ('request rate',)},
            {'line': "Namespace(subparser='bench', bench_type='serve', asr_max_audio_len_sec=inf, request_rate=inf, "
                     "burstiness=1.0, disable_tqdm=False)",
             'why': 'an argument dump (vllm bench, and vllm serve\'s "args: Namespace(...)" of older releases): inf is '
                    'a setting there, not a value the model computed',
             'source': 'excerpt of the Namespace(...) line of ' + F + 'bench_vllm-ascend-pr12609_request-rate-inf_from-GB18030.txt',
             'tokens': ('namespace(',)},
            {'line': 'information: inference ready',
             'why': 'inf and nan only as whole words: not inside information or inference',
             'source': 'constructed (the doctor\'s tests)'},
        ),
        'sources': ('https://github.com/vllm-project/vllm/issues/641',),
    },
)

ENTRIES = dict((entry['id'], entry) for entry in CATALOGUE)


def _token(item):
    if isinstance(item, Token):
        return Token(item.text.lower(), item.word)
    return Token(item.lower(), False)


def _is_word_char(char):
    return char.isalnum() or char == '_'


def period(text):
    """The smallest period of ``text`` (its length less its longest proper border), by the KMP failure function."""
    border = [0] * len(text)
    length = 0
    for index in range(1, len(text)):
        while length and text[index] != text[length]:
            length = border[length - 1]
        if text[index] == text[length]:
            length += 1
        border[index] = length
    return len(text) - (border[-1] if text else 0)


def skip(token):
    """How far past an occurrence of ``token`` whose neighbours failed the next search starts (module docstring)."""
    if all(_is_word_char(char) for char in token.text):
        return len(token.text)
    return period(token.text)


def _compile(catalogue):
    compiled = []
    for entry in catalogue:
        patterns = tuple(tuple(_token(item) for item in pattern) for pattern in entry['patterns'])
        excluded = tuple(tuple(_token(item) for item in case['tokens']) for case in entry['not_this'] if case.get('tokens'))
        compiled.append((entry, patterns, excluded))
    return tuple(compiled)


_COMPILED = _compile(CATALOGUE)
# Every distinct token of the catalogue (patterns and not_this), with the distance a failed word match skips.
TOKENS = tuple(sorted(set(token for _entry, patterns, excluded in _COMPILED for group in patterns + excluded
                          for token in group)))
_SKIP = dict((token, skip(token)) for token in TOKENS)


def prepare(line, steps=None):
    """``line`` (str or bytes) cut to MAX_LINE_CHARS characters: the cut text and its lowercase form."""
    steps = steps if steps is not None else Steps()
    if isinstance(line, (bytes, bytearray)):
        raw = bytes(line[:MAX_LINE_CHARS * 4])
        steps.count += len(raw)
        line = raw.decode('utf-8', 'replace')
    elif not isinstance(line, str):
        line = str(line)
    cut = line[:MAX_LINE_CHARS]
    lowered = cut.lower()[:MAX_LINE_CHARS]
    steps.count += 1 + len(cut) + len(lowered)
    return cut, lowered


def _found(text, token, steps):
    """Whether ``token`` occurs in ``text`` (with free neighbours for a word token), counting the work."""
    needle, length, start, end = token.text, len(token.text), 0, len(text)
    while True:
        position = text.find(needle, start)
        steps.count += (end if position < 0 else position + length) - start + 1
        if position < 0:
            return False
        if not token.word:
            return True
        before, after = position - 1, position + length
        if (before < 0 or not _is_word_char(text[before])) and (after >= end or not _is_word_char(text[after])):
            return True
        start = position + _SKIP[token]


def _match(lowered, steps):
    seen = {}

    def has(token):
        if token not in seen:
            seen[token] = _found(lowered, token, steps)
        return seen[token]

    for entry, patterns, excluded in _COMPILED:
        if any(all(has(token) for token in pattern) for pattern in patterns):
            if not any(all(has(token) for token in case) for case in excluded):
                return entry
    return None


def match_line(line, steps=None):
    """The first entry of CATALOGUE that ``line`` (str or bytes) matches, or None."""
    steps = steps if steps is not None else Steps()
    return _match(prepare(line, steps)[1], steps)


def pattern_matches(entry, line, steps=None):
    """Whether ``line`` matches one of the patterns of ``entry`` (a CATALOGUE dict), its not_this cases left aside."""
    steps = steps if steps is not None else Steps()
    lowered = prepare(line, steps)[1]
    return any(all(_found(lowered, _token(item), steps) for item in pattern) for pattern in entry['patterns'])


def clean(text):
    """``text`` with valid UTF-8 only: undecodable bytes kept as lone surrogates become U+FFFD."""
    try:
        raw = text.encode('utf-8', 'surrogateescape')
    except UnicodeEncodeError:
        raw = text.encode('utf-8', 'replace')
    return raw.decode('utf-8', 'replace')


def scan(lines, per_kind=LINES_PER_KIND, line_chars=LINE_CHARS, steps=None):
    """Match every line: ``{'lines_read', 'found': [ids in catalogue order], 'counts': {id: lines},
    'matches': {id: [the last per_kind matching lines, stripped and cut to line_chars]}}``."""
    steps = steps if steps is not None else Steps()
    counts = {}
    kept = {}
    read = 0
    for line in lines:
        read += 1
        cut, lowered = prepare(line, steps)
        entry = _match(lowered, steps)
        if entry is None:
            continue
        counts[entry['id']] = counts.get(entry['id'], 0) + 1
        steps.count += len(cut)
        kept.setdefault(entry['id'], collections.deque(maxlen=max(per_kind, 1))).append(clean(cut.strip()[:line_chars]))
    found = [entry['id'] for entry in CATALOGUE if entry['id'] in counts]
    return {'lines_read': read, 'found': found, 'counts': counts,
            'matches': dict((key, list(kept[key])[-per_kind:] if per_kind > 0 else []) for key in found)}


def explain(lines, per_kind=LINES_PER_KIND, steps=None):
    """The known failures in ``lines`` (a failed service's journal), in catalogue order: ``[{'id', 'status',
    'cause', 'fix', 'lines'}]`` with the last ``per_kind`` matching lines of each."""
    result = scan(lines, per_kind=per_kind, steps=steps)
    return [{'id': key, 'status': ENTRIES[key]['status'], 'cause': ENTRIES[key]['cause'], 'fix': ENTRIES[key]['fix'],
             'lines': result['matches'][key]} for key in result['found']]


def describe(known):
    """One sentence for a failure message: what the journal shows and what to do, from ``explain``'s list."""
    return 'the journal shows %s' % '; '.join(
        '%s: %s Fix: %s' % (item['id'], item['cause'].rstrip('.') + '.', item['fix']) for item in known)
