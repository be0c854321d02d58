# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Numbers checked once, the same way in a module's main() and in a role's validation (through a filter): NaN,
infinity, booleans, values below or above the range the option accepts (an overflowing time limit among them) are
refused with a message naming the option; no value is clamped, and none silently turns a check off. Ansible's own
``float`` and ``int`` types let ``nan``, ``inf`` and numbers of any size through, so every numeric option is checked
here after them. Standard library only.
"""

from __future__ import annotations

import math

# The longest time limit or interval any option takes: a year of seconds. Larger values overflow time.sleep,
# threading and coreutils timeout, or mean "never", which an option with a limit must not.
MAX_SECONDS = 366 * 24 * 3600


def _shown(value):
    return repr(value) if isinstance(value, float) else str(value)


def number_problem(option, value, minimum=None, maximum=None, above=None, integer=False):
    """None when ``value`` is a finite number (an integer with ``integer``) with ``minimum <= value <= maximum`` and
    ``value > above`` (each bound when given); otherwise the message, naming ``option`` and the range it accepts.
    A string that is a decimal number (as templating may give) is judged as that number."""
    number = value
    if isinstance(value, str):
        try:
            number = int(value.strip()) if integer else float(value.strip())
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        number = None
    elif isinstance(number, float) and not math.isfinite(number):
        number = None
    elif integer and isinstance(number, float):
        number = int(number) if number.is_integer() else None
    accepts = _range_text(minimum, maximum, above, integer)
    if number is None:
        return '%s must be %s; got %s' % (option, accepts, _shown(value) if isinstance(value, (int, float)) else repr(value))
    if ((minimum is not None and number < minimum) or (maximum is not None and number > maximum)
            or (above is not None and number <= above)):
        return '%s must be %s; got %s' % (option, accepts, _shown(value))
    return None


def check_number(option, value, minimum=None, maximum=None, above=None, integer=False):
    """``value`` as a number (int with ``integer``, else as given) when :func:`number_problem` finds none;
    :raises ValueError: with its message otherwise."""
    problem = number_problem(option, value, minimum, maximum, above, integer)
    if problem:
        raise ValueError(problem)
    if isinstance(value, str):
        return int(value.strip()) if integer else float(value.strip())
    return int(value) if integer else value


def _range_text(minimum, maximum, above, integer):
    kind = 'a whole number' if integer else 'a finite number'
    bounds = []
    if above is not None:
        bounds.append('above %s' % _shown(above))
    if minimum is not None:
        bounds.append('at least %s' % _shown(minimum))
    if maximum is not None:
        bounds.append('at most %s' % _shown(maximum))
    return kind + (' ' + ' and '.join(bounds) if bounds else '')
