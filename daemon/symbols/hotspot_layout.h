/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hs_ (hotspot.h): the layout of a HotSpot JVM's structures, from the tables its libjvm.so
 * publishes (hotspot_layout.c), and what every part that reads a JVM shares: its module's
 * name, the tag of a Java frame's location, reading a process's memory.
 */
#ifndef PCMON_HOTSPOT_LAYOUT_H
#define PCMON_HOTSPOT_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* A Java frame's location in a walk's pcs (hs_walk()): HS_LOC_TAG | the sym location. */
#define HS_LOC_TAG (1ull << 63)

/* Read @len bytes at @addr of process @pid: 0 or -errno (-EFAULT: a short read). */
int hs_mem(uint32_t pid, uint64_t addr, void *buf, size_t len);

static inline uint64_t hs_u64(const uint8_t *b, uint32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static inline uint32_t hs_u32(const uint8_t *b, uint32_t off)
{
	uint32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static inline uint16_t hs_u16(const uint8_t *b, uint32_t off)
{
	uint16_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

#endif
