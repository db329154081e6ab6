// SPDX-License-Identifier: GPL-2.0-only
/*
 * The CPython offsets pcmon reads frames with (daemon/symbols/python_layouts.h), checked
 * against one version's own headers when `make unit` compiles this file: the Makefile
 * compiles it once for each version whose headers are present (pyenv's 3.8 to 3.13, the
 * system's python3.11-dev), so that a layout that moved fails the build, not a profile.
 */
#include "python_fields.h"
#include "python_layouts.h"

#if PY_VERSION_HEX < 0x03080000 || PY_VERSION_HEX >= 0x030e0000
#error "python_layouts.h has CPython 3.8 to 3.13: build with one of their headers"
#endif

/* PY3<minor>_<name> of the version compiled against */
#define CAT3(a, b, c) a##b##c
#define XCAT3(a, b, c) CAT3(a, b, c)
#define WANT(n) XCAT3(PY3, PY_MINOR_VERSION, _##n)

#define OFF(n, t, m) _Static_assert(offsetof(t, m) == WANT(n), #t "." #m " moved (" #n ")");
#define SIZE(n, t) _Static_assert(sizeof(t) == WANT(n), "sizeof(" #t ") changed (" #n ")");
#define VAL(n, e) _Static_assert((e) == WANT(n), #e " changed (" #n ")");
PY_FIELDS

/* the frame window BPF reads in one go (PCMON_PY_FRAME_WINDOW, 96 bytes) holds its fields */
#if PY_VERSION_HEX < 0x030b0000
_Static_assert(WANT(FR_LASTI) + 4 - WANT(FR_PREVIOUS) <= 96 && WANT(FR_CODE) > WANT(FR_PREVIOUS),
	       "a frame's fields no longer fit PCMON_PY_FRAME_WINDOW");
#endif
