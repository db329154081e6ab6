/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hs_: HotSpot JVM frames (docs/java.md). The layout of a JVM's structures as its libjvm.so
 * publishes it for serviceability tools (gHotSpotVMStructs, gHotSpotVMTypes and their int and
 * long constants, read by name: hotspot.c), an unwinder over a copied user stack that steps
 * through interpreted and compiled Java frames and hands native frames to the CFI walk
 * (hotspot_unwind.c), and the naming of Java methods with their inlined callees and lines
 * (hotspot_names.c, over the pure decoders of hotspot_decode.c).
 */
#ifndef PCMON_HOTSPOT_H
#define PCMON_HOTSPOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hotspot_layout.h"
#include "pcmon_bpf.h"

struct sym;
struct hs;

struct hs *hs_new(struct sym *s);
void hs_free(struct hs *h);

/*
 * Is image @epoch of @pid a HotSpot JVM pcmon can read? Looked at its first time and, while
 * it maps the java launcher's libjli.so but no libjvm.so yet (the launcher loads it a moment
 * after exec), again at most every 100 ms, HS_LOOK_TRIES times. A JVM pcmon cannot read is
 * said once in the log.
 */
#define HS_LOOK_TRIES 100
bool hs_is_jvm(struct hs *h, uint32_t pid, uint32_t epoch);
/*
 * Image @epoch of @pid loaded objects, or was first sampled: looked at again now (libjvm.so,
 * maybe), whatever its looks so far, with the address map the engine read for that event
 * before handing it on (engine.c). (A look made for its first samples, which stream in
 * before the event that says they came, may have had a map read at its exec, without the
 * libjvm.so the dynamic linker loaded before the first sample: no event says so.)
 */
void hs_loaded(struct hs *h, uint32_t pid, uint32_t epoch);
/*
 * Look again at the processes that may still become JVMs (a launcher whose libjvm was not
 * ready): @found for each found now. For the samples that wait in BPF (--unwind fp), whose
 * conversion comes too late to look.
 */
void hs_look_pending(struct hs *h, void (*found)(void *ctx, uint32_t pid, uint32_t epoch),
		     void *ctx);
/*
 * True once for each process found to map libjvm.so (its tables filled in or not yet) or the
 * java launcher (libjli.so, or an executable named java): the caller tells BPF
 * (sampler_jvm_set()), so that its samples come with their stacks from then on, walked
 * through their Java frames as soon as the JVM's tables can be read.
 */
bool hs_new_jvm(struct hs *h, uint32_t pid);
/*
 * Is @pid a JVM whose tables cannot be read yet (a libjvm.so mapped, or the java launcher's,
 * its initializers still at work)? Its samples' Java frames cannot be walked yet.
 */
bool hs_starting(struct hs *h, uint32_t pid);
/* @pid exited or exec'ed: what was kept of it goes. */
void hs_forget(struct hs *h, uint32_t pid);
/* @pid exited at @now (ns): forgotten HS_FORGET_NS later (its records may still be on their
 * way, named from what was read while it ran). */
#define HS_FORGET_NS (30 * 1000000000ull)
void hs_exited(struct hs *h, uint32_t pid, uint64_t now);
/* Processes it keeps anything of (looked at, running or exited less than HS_FORGET_NS ago). */
uint32_t hs_procs_kept(const struct hs *h);

/* How a HotSpot walk ended beyond the CFI walk's reasons (unwind.h). */
enum hs_end {
	HS_END_NATIVE = 0, /* the native walk's end (*@end) says */
	HS_END_JAVA,	   /* a Java frame could not be walked or named (stale, unreadable) */
};

/*
 * Walk a copied stack of a JVM (as unw_walk()), stepping through Java frames: @code is the
 * first 4 bytes of code at the sampled pc as they were then (0: not known), which the code
 * there must still be for its frame to be named. @pcs gets
 * native pcs as they are and, for each Java frame, HS_LOC_TAG | a location (sym.h), one per
 * physical frame (its inlined methods are that location's inline frames; HS_LOC_TAG is in
 * hotspot_layout.h). *@hend says if Java frames stopped it.
 */
int hs_walk(struct hs *h, uint32_t pid, uint32_t epoch, const __u64 regs[PCMON_NREGS],
	    uint64_t start_sp, const uint8_t *stack, uint32_t len, uint32_t code, __u64 *pcs,
	    uint32_t max, int *end, enum hs_end *hend);

/* Counters for `pcmon status`. */
#define HS_STATS_FIELDS(X)                                                            \
	X(jvms)	       /* JVMs found */                                               \
	X(frames)      /* Java frames walked */                                       \
	X(compiled)    /* of them, compiled */                                        \
	X(inlined)     /* methods inlined into those */                               \
	X(interpreted) /* interpreted frames */                                       \
	X(stubs)       /* stubs and adapters */                                       \
	X(stale)       /* frames refused: their code blob freed or not what it was */ \
	X(unwalked)    /* walks stopped at a Java frame (cut short, java) */
struct hs_stats {
#define HS_STAT(f) uint64_t f;
	HS_STATS_FIELDS(HS_STAT)
#undef HS_STAT
};
void hs_stats(const struct hs *h, struct hs_stats *st);

/* ---- pure parts (hotspot_decode.c), unit-tested */

/* HotSpot's compressed stream of ints (CompressedReadStream): @x1 for UNSIGNED5 (JDK 21 on). */
struct hs_stream {
	const uint8_t *buf;
	size_t len, pos;
	bool x1, bad;
};
uint32_t hs_read_int(struct hs_stream *s);
int32_t hs_read_signed(struct hs_stream *s);
/* The line of bytecode index @bci in a compressed line number table; -1 if none. */
int hs_line_of(const uint8_t *tab, size_t len, bool x1, int bci);
/* One scope of a compiled frame's debug info at @offset: its sender's offset (0: none), its
 * method's index in the nmethod's metadata, its bci. False if it cannot be read. */
bool hs_scope_at(const uint8_t *data, size_t len, bool x1, uint32_t offset, int entry_bci,
		 uint32_t *sender, uint32_t *method_index, int *bci);
/* "java/util/HashMap$Node" + "get" -> "java.util.HashMap$Node.get" */
void hs_proc_name(const char *klass, size_t klen, const char *method, size_t mlen, char *out,
		  size_t len);

#endif
