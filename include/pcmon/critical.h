/* SPDX-License-Identifier: MIT */
/*
 * pcmon critical sections: mark a region of your program so that pcmon charges the samples
 * taken inside it to a named section instead of any procedure.
 *
 *	#include <pcmon/critical.h>
 *
 *	PCMON_CRITICAL_BEGIN("gc");
 *	collect_garbage();
 *	PCMON_CRITICAL_END();
 *
 * Sections nest; a sample is charged to the innermost one. The name must be a string that
 * stays valid while the section is open (a literal is best); pcmon keeps its first 31 bytes.
 * Every BEGIN must be matched by an END on the same thread.
 *
 * The markers are USDT probes (provider "pcmon"): each is a single `nop` instruction until
 * pcmond attaches to it, and needs only <sys/sdt.h> (Debian: systemtap-sdt-dev) to build,
 * from C or C++. Programs that do not include this header pay nothing.
 */
#ifndef PCMON_CRITICAL_H
#define PCMON_CRITICAL_H

#include <sys/sdt.h>

#define PCMON_CRITICAL_BEGIN(name) DTRACE_PROBE1(pcmon, critical_begin, (const char *)(name))
#define PCMON_CRITICAL_END() DTRACE_PROBE(pcmon, critical_end)

#endif /* PCMON_CRITICAL_H */
