// SPDX-License-Identifier: GPL-2.0-only
/* A library loaded with dlopen: half of lib_work runs inside the section "libsec". */
#include <pcmon/critical.h>
#include <stdint.h>

#include "../workload.h"

NOINLINE void lib_plain(uint64_t n) { SPIN_BODY(n); }
NOINLINE void lib_marked(uint64_t n) { SPIN_BODY(n); }

void lib_work(uint64_t n)
{
	lib_plain(n);
	PCMON_CRITICAL_BEGIN("libsec");
	lib_marked(n);
	PCMON_CRITICAL_END();
}
