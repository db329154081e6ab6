// SPDX-License-Identifier: GPL-2.0-only
/*
 * A library loaded with dlopen: half of lib_work runs inside the section "libsec". The CPU
 * time spent inside it is read from within (lib_marked_ns): the section's probes trap on a
 * machine where pcmon watches, and a busy virtual machine makes a trap cost microseconds, a
 * share of a 100 us call that half of the call's whole time would count as the section's.
 */
#include <pcmon/critical.h>
#include <stdint.h>

#include "../workload.h"

uint64_t lib_marked_ns;

NOINLINE void lib_plain(uint64_t n) { SPIN_BODY(n); }
NOINLINE void lib_marked(uint64_t n) { SPIN_BODY(n); }

void lib_work(uint64_t n)
{
	uint64_t t0;

	lib_plain(n);
	PCMON_CRITICAL_BEGIN("libsec");
	t0 = cpu_ns();
	lib_marked(n);
	lib_marked_ns += cpu_ns() - t0;
	PCMON_CRITICAL_END();
}
