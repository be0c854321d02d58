# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The doctor's compliance findings: evidence for a site's compliance asks, judged from what ``ascend_doctor``'s host
reader observed (nothing here reads the host). Each finding is ``{'id', 'status', 'summary', 'evidence', 'fix'}``:
``status`` is ``pass``, ``fail`` or ``unknown`` (the host did not show enough to tell), ``evidence`` what was seen,
as data, and ``fix`` what to do (null on a pass). They are reported beside the health findings (``compliance`` in
the report), in COMPLIANCE's order; they do not change the health verdict unless the doctor is told to
(``doctor_compliance_required``).
"""

from __future__ import annotations

import ipaddress
import json
import stat

STATUSES = ('pass', 'fail', 'unknown')
# The findings, in report order; model_manifest is the served model's manifest digest against the known good.
COMPLIANCE = ('secure_boot', 'offline_routes', 'tls_key', 'model_manifest')

# The EFI variable that says whether Secure Boot is on (EFI global variable GUID); efivarfs gives 4 bytes of
# attributes, then the value: one byte, 1 when Secure Boot is enforced.
SECURE_BOOT_VARIABLE = 'SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c'
# Well-known public resolvers' addresses: a route to them is a route to the internet. `ip route get` asks the
# kernel's routing table only; nothing is sent to them.
PUBLIC_ADDRESSES = ('1.1.1.1', '8.8.8.8', '114.114.114.114', '2400:3200::1', '2001:4860:4860::8888')
# What `ip route get` says (stderr, exit code 2) when the table has no usable route: none, unreachable, prohibit,
# blackhole (the address itself is checked to be valid first, so EINVAL is the blackhole).
NO_ROUTE_ANSWERS = ('Network is unreachable', 'No route to host', 'Permission denied', 'Invalid argument')

UEFI_FIX = ('Boot the node in UEFI mode with Secure Boot on (the server\'s BIOS setup through its BMC), with a signed '
            'kernel and signed NPU driver modules (the driver\'s signature, or your own key enrolled with mokutil '
            '--import)')


def compliance_finding(check_id, status, summary, evidence, fix=None):
    """One compliance finding (see the module docstring)."""
    if status not in STATUSES:
        raise ValueError('%r is not a compliance status (%s)' % (status, ', '.join(STATUSES)))
    return {'id': check_id, 'status': status, 'summary': summary, 'evidence': evidence,
            'fix': None if status == 'pass' else fix}


def order(findings):
    """The findings in COMPLIANCE's order (an id it does not name last)."""
    rank = dict((name, index) for index, name in enumerate(COMPLIANCE))
    return sorted(findings, key=lambda item: rank.get(item['id'], len(COMPLIANCE)))


def public_address_problem(address):
    """Why ``address`` is no public IP address (the routes to the internet are looked up to such), None when it is
    one."""
    try:
        parsed = ipaddress.ip_address(address if isinstance(address, str) else '')
    except ValueError:
        return 'must be an IP address; got %s' % json.dumps(address)
    if not parsed.is_global or parsed.is_multicast:
        return 'must be a public (global unicast) address, not a private, loopback or reserved one; got %s' % address
    return None


def input_problems(inputs, prefix=''):
    """The problems of the compliance inputs among the doctor's (``public_addresses``, ``ip_path``; ``site_offline`` is
    a boolean its argument spec checks), each naming the variable as ``prefix`` + its name."""
    problems = []
    ip_path = inputs.get('ip_path')
    if ip_path is not None and (not isinstance(ip_path, str) or not ip_path.startswith('/')
                                or any(ord(char) < 32 or ord(char) == 127 for char in ip_path)):
        problems.append('%sip_path must be null or an absolute path without control characters; got %s'
                        % (prefix, json.dumps(ip_path, default=str)))
    addresses = inputs.get('public_addresses')
    if addresses is not None:
        if not isinstance(addresses, list) or not addresses:
            problems.append('%spublic_addresses must be null or a non-empty list of public IP addresses; got %s'
                            % (prefix, json.dumps(addresses, default=str)))
        else:
            for index, address in enumerate(addresses):
                problem = public_address_problem(address)
                if problem:
                    problems.append('%spublic_addresses[%d] %s' % (prefix, index, problem))
    return problems


# ----------------------------------------------------------------------------------------------------- secure boot

def parse_mokutil_sb_state(text):
    """True, False or None (not said) from ``mokutil --sb-state``'s output (``SecureBoot enabled`` / ``disabled``;
    ``This system doesn't support Secure Boot`` is False)."""
    lowered = (text or '').lower()
    if 'secureboot enabled' in lowered:
        return True
    if 'secureboot disabled' in lowered or "doesn't support secure boot" in lowered:
        return False
    return None


def check_secure_boot(efi, variable, mokutil=None, efi_path='/sys/firmware/efi'):
    """The secure-boot finding: ``efi`` whether ``efi_path`` exists (no: a legacy BIOS boot, which has no Secure
    Boot), ``variable`` the bytes of the SecureBoot EFI variable (None when it cannot be read), ``mokutil`` the text
    of ``mokutil --sb-state`` when it was asked (the variable unreadable)."""
    evidence = {'efi': efi, 'efi_path': efi_path, 'variable': None, 'mokutil': mokutil}
    if not efi:
        return compliance_finding('secure_boot', 'fail', 'legacy BIOS boot (no %s): Secure Boot needs UEFI' % efi_path,
                                  evidence, UEFI_FIX)
    if variable is not None and len(variable) >= 5:
        value = variable[4] if isinstance(variable[4], int) else ord(variable[4])
        evidence['variable'] = value
        if value == 1:
            return compliance_finding('secure_boot', 'pass', 'UEFI boot with Secure Boot on (%s = 1)'
                                      % SECURE_BOOT_VARIABLE, evidence)
        return compliance_finding('secure_boot', 'fail', 'UEFI boot with Secure Boot off (%s = %d)'
                                  % (SECURE_BOOT_VARIABLE, value), evidence, UEFI_FIX)
    state = parse_mokutil_sb_state(mokutil)
    if state is not None:
        return compliance_finding('secure_boot', 'pass' if state else 'fail', 'UEFI boot, mokutil --sb-state: %s'
                                  % ' '.join((mokutil or '').split()), evidence, None if state else UEFI_FIX)
    return compliance_finding('secure_boot', 'unknown', 'UEFI boot, but neither the EFI variable %s (efivarfs '
                              'mounted?) nor mokutil --sb-state says whether Secure Boot is on' % SECURE_BOOT_VARIABLE,
                              evidence, 'Mount efivarfs (mount -t efivarfs efivarfs /sys/firmware/efi/efivars) or '
                              'install mokutil, and run the doctor again')


# --------------------------------------------------------------------------------------------------- no internet

def parse_route_get(rc, stdout, stderr):
    """One ``ip -j route get ADDRESS``: ``{'route': the route (dict) or None, 'no_route': why there is none, or
    None, 'error': what else went wrong, or None}``."""
    if rc == 0:
        try:
            routes = json.loads(stdout)
        except ValueError:
            return {'route': None, 'no_route': None, 'error': 'ip printed no JSON: %s' % (stdout or '').strip()[:200]}
        route = routes[0] if isinstance(routes, list) and routes and isinstance(routes[0], dict) else None
        if route is None:
            return {'route': None, 'no_route': None, 'error': 'ip printed no route: %s' % (stdout or '').strip()[:200]}
        if route.get('type') in ('unreachable', 'blackhole', 'prohibit', 'throw'):
            return {'route': None, 'no_route': '%s route' % route['type'], 'error': None}
        return {'route': route, 'no_route': None, 'error': None}
    text = ' '.join((stderr or stdout or '').split())
    for answer in NO_ROUTE_ANSWERS:
        if answer in text:
            return {'route': None, 'no_route': text, 'error': None}
    return {'route': None, 'no_route': None, 'error': 'ip route get failed (rc %s): %s' % (rc, text[:200])}


def check_offline_routes(declared, lookups, error=None):
    """The no-internet finding: ``declared`` whether the site is declared offline (doctor_site_offline),
    ``lookups`` ``{address: parse_route_get's dict}`` of the public addresses looked up, ``error`` why none could
    be (ip missing). Declared offline: a route to any of them fails, none to all passes. Not declared: unknown,
    with the routes as evidence."""
    routes = dict((address, lookup['route']) for address, lookup in sorted(lookups.items()) if lookup['route'])
    errors = dict((address, lookup['error']) for address, lookup in sorted(lookups.items()) if lookup['error'])
    evidence = {'declared_offline': declared, 'routes': routes, 'no_route': dict(
        (address, lookup['no_route']) for address, lookup in sorted(lookups.items()) if lookup['no_route']),
        'errors': errors}
    shown = '; '.join('%s via %s dev %s' % (address, route.get('gateway', 'a direct link'), route.get('dev', '?'))
                      for address, route in routes.items())
    if error:
        evidence['errors'] = {'ip': error}
        return compliance_finding('offline_routes', 'unknown', 'the routing table could not be read: %s' % error,
                                  evidence, 'Install iproute2 (the ip command) on the node')
    if not declared:
        return compliance_finding('offline_routes', 'unknown', 'the site is not declared offline (doctor_site_offline '
                                  'is false); routes to public addresses: %s' % (shown or 'none'), evidence,
                                  'Where the site must keep its data local, set doctor_site_offline: true so that a '
                                  'route to the internet fails this finding')
    if routes:
        return compliance_finding('offline_routes', 'fail', 'the site is declared offline, but the node has a route to '
                                  'the internet: %s' % shown, evidence,
                                  'Remove the routes to public networks (`ip route del default` and the matching '
                                  'lines of the network configuration), or route them to a blackhole; if the site is '
                                  'not offline, set doctor_site_offline: false')
    if errors:
        return compliance_finding('offline_routes', 'unknown', 'the site is declared offline, but the route to %s '
                                  'could not be looked up: %s' % (', '.join(errors), '; '.join(errors.values())),
                                  evidence, 'Run `ip route get ADDRESS` on the node for each address')
    return compliance_finding('offline_routes', 'pass', 'the site is declared offline and the node has no route to '
                              'any of %d public addresses (%s)' % (len(lookups), ', '.join(sorted(lookups))), evidence)


# --------------------------------------------------------------------------------------------------- the TLS key

def check_tls_key(record, key_stat):
    """The TLS key finding: ``record`` the service's deployment record (None when there is none), ``key_stat``
    ``{'exists', 'type' ('file' or another kind), 'owner', 'group', 'mode' (int)}`` of the key it names (None when
    the record names none). Pass: a regular file owned by root that no one else may read or write."""
    if record is None:
        return compliance_finding('tls_key', 'unknown', 'no deployment record of the service on this host: which '
                                  'key it serves with is not known', {'record': None},
                                  'Deploy the service with role kunpeng_ascend.vllm.vllm_service, or set '
                                  'doctor_service_name to the service recorded')
    tls = record.get('tls')
    evidence = {'service': record.get('name'), 'endpoint': record.get('endpoint'), 'tls': tls, 'key': key_stat}
    if not tls:
        return compliance_finding('tls_key', 'fail', 'the service %s serves plain http (%s): no TLS key'
                                  % (record.get('name'), record.get('endpoint')), evidence,
                                  'Serve over TLS: set vllm_service_tls_cert, vllm_service_tls_key and '
                                  'vllm_service_tls_ca and run playbooks/site.yml')
    path = tls['key']
    fix = ('Make the key readable by root only: `chown root:root %s && chmod 0600 %s`, or run playbooks/site.yml '
           '(role kunpeng_ascend.vllm.vllm_service puts it so)' % (path, path))
    if not key_stat or not key_stat.get('exists'):
        return compliance_finding('tls_key', 'fail', 'the TLS key %s the deployment record names is missing' % path,
                                  evidence, 'Run playbooks/site.yml: role kunpeng_ascend.vllm.vllm_service puts it in '
                                  'place (vllm_service_tls_key)')
    mode = key_stat.get('mode') or 0
    shown = '%s, owner %s:%s, mode %04o' % (key_stat.get('type'), key_stat.get('owner'), key_stat.get('group'),
                                            stat.S_IMODE(mode))
    if key_stat.get('type') != 'file' or key_stat.get('owner') != 'root' or mode & 0o077:
        return compliance_finding('tls_key', 'fail', 'the TLS key %s is %s: it must be a regular file of root that '
                                  'no one else may read or write' % (path, shown), evidence, fix)
    return compliance_finding('tls_key', 'pass', 'the TLS key %s is %s' % (path, shown), evidence)


def check_model_manifest(record, known_good, manifest_path, manifest_sha256):
    """The served model against the known good: ``record`` the service's deployment record (None: none),
    ``known_good`` the service's current known good summary from the local fact (None: none recorded),
    ``manifest_path`` the manifest read in the served model's directory and ``manifest_sha256`` its SHA-256 (None:
    absent or unreadable). Pass: the model the service serves is the known good's and its manifest has the known
    good's digest."""
    if record is None:
        return compliance_finding('model_manifest', 'unknown', 'no deployment record of the service on this host: '
                                  'which model it serves is not known', {'record': None},
                                  'Deploy the service with role kunpeng_ascend.vllm.vllm_service, or set '
                                  'doctor_service_name to the service recorded')
    evidence = {'service': record.get('name'), 'model': record.get('model'), 'manifest': manifest_path,
                'manifest_sha256': manifest_sha256, 'known_good': None}
    if not known_good:
        return compliance_finding('model_manifest', 'unknown', 'no known good is recorded for the service %s'
                                  % record.get('name'), evidence,
                                  'Run playbooks/site.yml or rolling_update.yml: role kunpeng_ascend.vllm.vllm_service '
                                  'records the known good when its health gate passes')
    evidence['known_good'] = {'model': known_good.get('model'), 'model_digest': known_good.get('model_digest'),
                              'time': known_good.get('time')}
    rollback = 'Roll the node back with playbooks/rollback.yml -e vllm_service_rollback_to=current, or deploy ' \
        'the intended model again with playbooks/rolling_update.yml'
    if record.get('model') != known_good.get('model'):
        return compliance_finding('model_manifest', 'fail', 'the service %s serves %s, but its known good (%s) '
                                  'serves %s' % (record.get('name'), record.get('model'), known_good.get('time'),
                                                 known_good.get('model')), evidence, rollback)
    if not known_good.get('model_digest'):
        return compliance_finding('model_manifest', 'unknown', 'the known good of %s recorded no manifest digest '
                                  'for %s' % (record.get('name'), record.get('model')), evidence,
                                  'Deploy with vllm_service_verify_model: true so that the digest is recorded')
    if manifest_sha256 is None:
        return compliance_finding('model_manifest', 'fail', 'the manifest %s of the served model is missing or '
                                  'unreadable' % manifest_path, evidence, rollback)
    if manifest_sha256 != known_good['model_digest']:
        return compliance_finding('model_manifest', 'fail', 'the manifest %s has digest %s, not the known good\'s %s'
                                  % (manifest_path, manifest_sha256, known_good['model_digest']), evidence, rollback)
    return compliance_finding('model_manifest', 'pass', 'the served model %s has the known good\'s manifest (sha256 %s)'
                              % (record.get('model'), manifest_sha256), evidence)
