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

#include "pcmon_bpf.h"

struct sym;
struct hs;

/* The module Java frames are procedures of: "java.com.example.Phases.alpha". */
#define HS_MODULE "java"

/* Reading memory: a live process (process_vm_readv), or the test's own (a dlopen'ed libjvm). */
struct hs_rd {
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len); /* 0 or -errno */
	void *ctx;
};

/* Where the published tables are in the reader's address space (libjvm's dynamic symbols). */
enum hs_table { HS_STRUCTS, HS_TYPES, HS_INTS, HS_LONGS, HS_NTABLES };
struct hs_tables {
	uint64_t table[HS_NTABLES]; /* the address of gHotSpotVMStructs etc. (the pointer's) */
	/* the address of each gHotSpotVM*Entry*Offset and *ArrayStride (0: the usual layout) */
	uint64_t shape[HS_NTABLES][8];
};
/* The symbol names of struct hs_tables, for a lookup in libjvm's .dynsym. */
extern const char *const hs_table_syms[HS_NTABLES];
extern const char *const hs_shape_syms[HS_NTABLES][8];

/*
 * What pcmon needs of a JVM, in bytes, from the published tables. A field the JVM does not
 * publish is HS_NONE; hs_layout_read() says which missing ones it cannot do without.
 */
#define HS_NONE 0xffffffffu
struct hs_layout {
	uint32_t version; /* the JDK's feature version, as far as the tables tell (11, 17, ...) */
	/* statics: addresses in the process */
	uint64_t cc_heaps, cc_low, cc_high, interp_code;
	/* GrowableArray<CodeHeap*>, CodeHeap, VirtualSpace, HeapBlock */
	uint32_t ga_len, ga_data;
	uint32_t heap_memory, heap_segmap, heap_log2seg;
	uint32_t vs_low_boundary, vs_high_boundary, vs_low, vs_high;
	uint32_t hb_size, hb_used;
	/* StubQueue: the interpreter's code */
	uint32_t sq_buffer, sq_limit;
	/* CodeBlob: code_begin is a pointer (code_offset: an offset from the blob, JDK 23 on) */
	uint32_t cb_name, cb_size, cb_frame_complete, cb_frame_size, cb_code_begin, cb_code_end,
		cb_code_offset, cb_data_offset, cb_size_bytes;
	uint8_t cb_frame_complete_2; /* _frame_complete_offset is 2 bytes (int16_t) */
	/* nmethod (with CompiledMethod's fields up to JDK 22) */
	uint32_t nm_method, nm_compile_id, nm_state, nm_scopes_data, nm_scopes_pcs, nm_deps,
		nm_metadata, nm_entry_bci;
	/* a frame being deoptimized: its return address the handler's, its pc saved in it */
	uint32_t nm_deopt_begin, nm_deopt_offset, nm_orig_pc;
	/* from JDK 23: the debug info out of the nmethod, in its immutable and mutable data */
	uint32_t nm_immutable, nm_immutable_size, cb_mutable, cb_mutable_size, cb_relocation_size;
	bool nm_immutable_layout;
	uint32_t pc_pc_offset, pc_scope_decode, pc_size;
	/* Method, ConstMethod, ConstantPool, Klass, Symbol */
	uint32_t m_const;
	uint32_t cm_constants, cm_flags, cm_code_size, cm_name_index, cm_sig_index, cm_size;
	uint8_t cm_flags_4;    /* ConstMethod's flags are 4 bytes (ConstMethodFlags, JDK 21 on) */
	uint32_t cm_has_lines; /* the flag bit saying it has a line number table */
	uint32_t cp_holder, cp_source_file, cp_size;
	uint32_t k_name;
	uint32_t sym_length, sym_body;
	/* the interpreter's frame, in words from its frame pointer (x86-64's, unless published) */
	int32_t if_method, if_bcp, if_sender_sp;
	int32_t invocation_entry_bci;
	bool scopes;	   /* the debug info of compiled frames can be decoded (inlining, lines) */
	bool unsigned5_x1; /* compressed streams exclude a zero byte (UNSIGNED5, JDK 21 on) */
};

/*
 * Read the tables through @rd into *@l: 0, -ENOTSUP with @why (a table or a field pcmon
 * cannot do without is missing), or -EAGAIN (libjvm's initializers have not filled them in
 * yet: a JVM starting).
 */
int hs_layout_read(const struct hs_rd *rd, const struct hs_tables *t, struct hs_layout *l,
		   char *why, size_t wlen);
/* Look one name up in the published tables (tests, diagnostics): the field's offset or static
 * address, a type's size or a constant's value; -ENOENT if not published. */
int hs_lookup(const struct hs_rd *rd, const struct hs_tables *t, const char *type,
	      const char *field, uint64_t *val);

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
/* Image @epoch of @pid loaded objects at @ts: looked at again now (libjvm.so, maybe). */
void hs_loaded(struct hs *h, uint32_t pid, uint32_t epoch, uint64_t ts);
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
 * physical frame (its inlined methods are that location's inline frames). *@hend says if
 * Java frames stopped it.
 */
#define HS_LOC_TAG (1ull << 63)
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
