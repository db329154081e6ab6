# SPDX-License-Identifier: GPL-2.0-only
"""pymarkup SECS: a Python function whose name is markup, for pcmond's page: it must show it
as text (tests/integration/test_web.py). Busy for SECS seconds (default 2)."""
import sys
import time

NAME = '<img src=x onerror="window.pwned=1">'


def work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


work.__code__ = work.__code__.replace(co_name=NAME, co_qualname=NAME)

end = time.time() + (float(sys.argv[1]) if len(sys.argv) > 1 else 2)
while time.time() < end:
    work(20000)
