// SPDX-License-Identifier: GPL-2.0-only
/*
 * HotSpot's published structure descriptions, read by name (docs/java.md): the layout of a
 * JVM's structures from the tables its libjvm.so publishes for serviceability tools, and
 * reading a process's memory. What the JVMs found (hotspot.c), the walk (hotspot_unwind.c)
 * and the names (hotspot_names.c) read a JVM with.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "hotspot_layout.h"
#include "util.h"

const char *const hs_table_syms[HS_NTABLES] = {
	"gHotSpotVMStructs",
	"gHotSpotVMTypes",
	"gHotSpotVMIntConstants",
	"gHotSpotVMLongConstants",
};

/*
 * Each table's entry layout, as the JVM publishes it: [0] its (type) name, [1] the field's
 * name, [2] is-static, [3] offset, [4] address, [5] size, [6] value, [7] the stride.
 */
enum { SH_NAME, SH_FIELD, SH_STATIC, SH_OFFSET, SH_ADDRESS, SH_SIZE, SH_VALUE, SH_STRIDE };
const char *const hs_shape_syms[HS_NTABLES][8] = {
	[HS_STRUCTS] = { "gHotSpotVMStructEntryTypeNameOffset",
			 "gHotSpotVMStructEntryFieldNameOffset",
			 "gHotSpotVMStructEntryIsStaticOffset", "gHotSpotVMStructEntryOffsetOffset",
			 "gHotSpotVMStructEntryAddressOffset", NULL, NULL,
			 "gHotSpotVMStructEntryArrayStride" },
	[HS_TYPES] = { "gHotSpotVMTypeEntryTypeNameOffset", NULL, NULL, NULL, NULL,
		       "gHotSpotVMTypeEntrySizeOffset", NULL, "gHotSpotVMTypeEntryArrayStride" },
	[HS_INTS] = { "gHotSpotVMIntConstantEntryNameOffset", NULL, NULL, NULL, NULL, NULL,
		      "gHotSpotVMIntConstantEntryValueOffset",
		      "gHotSpotVMIntConstantEntryArrayStride" },
	[HS_LONGS] = { "gHotSpotVMLongConstantEntryNameOffset", NULL, NULL, NULL, NULL, NULL,
		       "gHotSpotVMLongConstantEntryValueOffset",
		       "gHotSpotVMLongConstantEntryArrayStride" },
};
/* The layout every JDK since 8 has had, for a shape variable that reads 0 or not at all. */
static const uint64_t shape_default[HS_NTABLES][8] = {
	[HS_STRUCTS] = { 0, 8, 24, 32, 40, 0, 0, 48 },
	[HS_TYPES] = { 0, 0, 0, 0, 0, 32, 0, 40 },
	[HS_INTS] = { 0, 0, 0, 0, 0, 0, 8, 16 },
	[HS_LONGS] = { 0, 0, 0, 0, 0, 0, 8, 16 },
};

/* ---- the tables, read whole */

struct ent {
	char *name, *field; /* field NULL for types and constants */
	uint64_t val;	    /* offset, static address, size or value */
	bool is_static;
};

struct dump {
	struct ent *e[HS_NTABLES];
	size_t n[HS_NTABLES], cap[HS_NTABLES];
};

static char *read_string(const struct hs_rd *rd, uint64_t addr)
{
	char buf[256];
	size_t at = 0;

	if (!addr)
		return NULL;
	/* most at once; in pieces of 16 if that fails, a string near the end of a mapping */
	if (!rd->read(rd->ctx, addr, buf, 64) && memchr(buf, 0, 64))
		return strdup(buf);
	while (at + 16 <= sizeof(buf)) {
		if (rd->read(rd->ctx, addr + at, buf + at, 16))
			return NULL;
		if (memchr(buf + at, 0, 16))
			return strdup(buf);
		at += 16;
	}
	return NULL;
}

static void dump_free(struct dump *d)
{
	for (int t = 0; t < HS_NTABLES; t++) {
		for (size_t i = 0; i < d->n[t]; i++) {
			free(d->e[t][i].name);
			free(d->e[t][i].field);
		}
		free(d->e[t]);
	}
}

#define HS_MAX_ENTRIES 20000

static int dump_read(const struct hs_rd *rd, const struct hs_tables *t, struct dump *d)
{
	memset(d, 0, sizeof(*d));
	for (int tb = 0; tb < HS_NTABLES; tb++) {
		uint64_t sh[8], base;
		uint8_t ent[256], chunk[32 * 256];

		for (int k = 0; k < 8; k++) {
			sh[k] = shape_default[tb][k];
			if (t->shape[tb][k] && !rd->read(rd->ctx, t->shape[tb][k], &base, 8) &&
			    base)
				sh[k] = base;
		}
		/* the stride is set by libjvm's initializers: 0, they have not run yet */
		if (t->shape[tb][SH_STRIDE] &&
		    (rd->read(rd->ctx, t->shape[tb][SH_STRIDE], &base, 8) || !base))
			return -EAGAIN;
		if (sh[SH_STRIDE] > sizeof(ent) || sh[SH_STRIDE] < 16)
			return -EPROTO;
		for (int k = 0; k < 7; k++)
			if (sh[k] + 8 > sh[SH_STRIDE])
				return -EPROTO;
		if (!t->table[tb] || rd->read(rd->ctx, t->table[tb], &base, 8) || !base)
			return -ENOENT;
		for (size_t i = 0, first = 0, got = 0; i < HS_MAX_ENTRIES; i++) {
			struct ent e = { 0 };
			uint64_t np;
			int32_t st;

			/* 32 entries a read, one at a time where that fails (the end of a mapping) */
			if (i >= first + got) {
				first = i;
				got = rd->read(rd->ctx, base + i * sh[SH_STRIDE], chunk,
					       32 * sh[SH_STRIDE])
					      ? 0
					      : 32;
			}
			if (i < first + got)
				memcpy(ent, chunk + (i - first) * sh[SH_STRIDE], sh[SH_STRIDE]);
			else if (rd->read(rd->ctx, base + i * sh[SH_STRIDE], ent, sh[SH_STRIDE]))
				return -EFAULT;
			np = hs_u64(ent, sh[SH_NAME]);
			if (!np)
				break; /* the last entry: all zero */
			e.name = read_string(rd, np);
			if (!e.name)
				return -EFAULT;
			switch (tb) {
			case HS_STRUCTS:
				e.field = read_string(rd, hs_u64(ent, sh[SH_FIELD]));
				memcpy(&st, ent + sh[SH_STATIC], 4);
				e.is_static = st != 0;
				e.val = hs_u64(ent, e.is_static ? sh[SH_ADDRESS] : sh[SH_OFFSET]);
				break;
			case HS_TYPES:
				e.val = hs_u64(ent, sh[SH_SIZE]);
				break;
			case HS_INTS:
				memcpy(&st, ent + sh[SH_VALUE], 4);
				e.val = (uint64_t)(int64_t)st;
				break;
			default:
				e.val = hs_u64(ent, sh[SH_VALUE]);
			}
			if (GROW(d->e[tb], d->cap[tb], d->n[tb] + 1)) {
				free(e.name);
				free(e.field);
				return -ENOMEM;
			}
			d->e[tb][d->n[tb]++] = e;
		}
	}
	return 0;
}

static int find(const struct dump *d, const char *type, const char *field, uint64_t *val)
{
	int tb = field ? HS_STRUCTS : HS_TYPES;

	for (int pass = 0; pass < (field ? 1 : 3); pass++, tb = pass == 1 ? HS_INTS : HS_LONGS) {
		for (size_t i = 0; i < d->n[tb]; i++) {
			const struct ent *e = &d->e[tb][i];

			if (strcmp(e->name, type) ||
			    (field && (!e->field || strcmp(e->field, field))))
				continue;
			*val = e->val;
			return 0;
		}
	}
	return -ENOENT;
}

int hs_lookup(const struct hs_rd *rd, const struct hs_tables *t, const char *type,
	      const char *field, uint64_t *val)
{
	struct dump d;
	int r = dump_read(rd, t, &d);

	if (!r)
		r = find(&d, type, field, val);
	dump_free(&d);
	return r;
}

/* A field (or type size, or constant) of the first of @names ("Type::field") published. */
static uint32_t off_of(const struct dump *d, const char *const *names)
{
	for (; *names; names++) {
		char type[96];
		const char *sep = strstr(*names, "::_"), *field = NULL;
		uint64_t v;

		snprintf(type, sizeof(type), "%s", *names);
		if (sep) {
			/* "HeapBlock::Header::_used": the type is what comes before the last "::" */
			const char *last = sep, *n;

			while ((n = strstr(last + 3, "::_")))
				last = n;
			type[last - *names] = 0;
			field = last + 2;
		}
		if (!find(d, type, field, &v))
			return (uint32_t)v;
		/* a constant: "ConstMethod::_has_linenumber_table" is its whole name */
		if (field && !find(d, *names, NULL, &v))
			return (uint32_t)v;
	}
	return HS_NONE;
}

#define OFF(...) off_of(&d, (const char *const[]){ __VA_ARGS__, NULL })

static uint64_t static_of(const struct dump *d, const char *type, const char *field)
{
	for (size_t i = 0; i < d->n[HS_STRUCTS]; i++) {
		const struct ent *e = &d->e[HS_STRUCTS][i];

		if (e->is_static && !strcmp(e->name, type) && e->field && !strcmp(e->field, field))
			return e->val;
	}
	return 0;
}

int hs_layout_read(const struct hs_rd *rd, const struct hs_tables *t, struct hs_layout *l,
		   char *why, size_t wlen)
{
	struct dump d;
	uint64_t vaddr;
	int32_t major = 0;
	uint32_t u;
	int r = dump_read(rd, t, &d);

	if (r) {
		snprintf(why, wlen, "its published tables could not be read (%s)", strerror(-r));
		dump_free(&d);
		/* (a table half filled in reads as garbage: looked at again, up to HS_LOOK_TRIES) */
		return r == -ENOENT ? -ENOTSUP : -EAGAIN;
	}
	memset(l, 0, sizeof(*l));
	vaddr = static_of(&d, "Abstract_VM_Version", "_vm_major_version");
	if (vaddr && !rd->read(rd->ctx, vaddr, &major, 4))
		l->version = major > 0 && major < 1000 ? major : 0;
	l->cc_heaps = static_of(&d, "CodeCache", "_heaps");
	l->cc_low = static_of(&d, "CodeCache", "_low_bound");
	l->cc_high = static_of(&d, "CodeCache", "_high_bound");
	l->interp_code = static_of(&d, "AbstractInterpreter", "_code");
	l->ga_len = OFF("GrowableArrayBase::_len", "GenericGrowableArray::_len");
	l->ga_data = OFF("GrowableArray<int>::_data");
	l->heap_memory = OFF("CodeHeap::_memory");
	l->heap_segmap = OFF("CodeHeap::_segmap");
	l->heap_log2seg = OFF("CodeHeap::_log2_segment_size");
	l->vs_low_boundary = OFF("VirtualSpace::_low_boundary");
	l->vs_high_boundary = OFF("VirtualSpace::_high_boundary");
	l->vs_low = OFF("VirtualSpace::_low");
	l->vs_high = OFF("VirtualSpace::_high");
	l->hb_size = OFF("HeapBlock");
	u = OFF("HeapBlock::_header");
	l->hb_used = OFF("HeapBlock::Header::_used");
	if (u != HS_NONE && l->hb_used != HS_NONE)
		l->hb_used += u;
	l->sq_buffer = OFF("StubQueue::_stub_buffer");
	l->sq_limit = OFF("StubQueue::_buffer_limit");
	l->cb_name = OFF("CodeBlob::_name");
	l->cb_size = OFF("CodeBlob::_size");
	l->cb_frame_complete = OFF("CodeBlob::_frame_complete_offset");
	l->cb_frame_complete_2 = l->version >= 23;
	l->cb_frame_size = OFF("CodeBlob::_frame_size");
	l->cb_code_begin = OFF("CodeBlob::_code_begin");
	l->cb_code_end = OFF("CodeBlob::_code_end");
	l->cb_code_offset = OFF("CodeBlob::_code_offset");
	l->cb_data_offset = OFF("CodeBlob::_data_offset");
	l->cb_size_bytes = OFF("nmethod");
	l->nm_method = OFF("CompiledMethod::_method", "nmethod::_method");
	l->nm_compile_id = OFF("nmethod::_compile_id");
	l->nm_state = OFF("nmethod::_state");
	l->nm_entry_bci = OFF("nmethod::_entry_bci");
	l->nm_scopes_data = OFF("CompiledMethod::_scopes_data_begin", "nmethod::_scopes_data_begin",
				"nmethod::_scopes_data_offset");
	l->nm_scopes_pcs = OFF("nmethod::_scopes_pcs_offset");
	l->nm_deps = OFF("nmethod::_dependencies_offset");
	l->nm_metadata = OFF("nmethod::_metadata_offset");
	l->nm_deopt_begin =
		OFF("CompiledMethod::_deopt_handler_begin", "nmethod::_deopt_handler_begin");
	l->nm_deopt_offset = OFF("nmethod::_deopt_handler_offset");
	l->nm_orig_pc = OFF("nmethod::_orig_pc_offset");
	l->nm_immutable = OFF("nmethod::_immutable_data");
	l->nm_immutable_size = OFF("nmethod::_immutable_data_size");
	l->cb_mutable = OFF("CodeBlob::_mutable_data");
	l->cb_mutable_size = OFF("CodeBlob::_mutable_data_size");
	l->cb_relocation_size = OFF("CodeBlob::_relocation_size");
	l->pc_pc_offset = OFF("PcDesc::_pc_offset");
	l->pc_scope_decode = OFF("PcDesc::_scope_decode_offset");
	l->pc_size = OFF("PcDesc");
	l->m_const = OFF("Method::_constMethod");
	l->cm_constants = OFF("ConstMethod::_constants");
	l->cm_flags = OFF("ConstMethod::_flags", "ConstMethod::_flags._flags");
	l->cm_flags_4 = OFF("ConstMethod::_flags") == HS_NONE;
	l->cm_code_size = OFF("ConstMethod::_code_size");
	l->cm_name_index = OFF("ConstMethod::_name_index");
	l->cm_sig_index = OFF("ConstMethod::_signature_index");
	l->cm_size = OFF("ConstMethod");
	l->cm_has_lines = OFF("ConstMethod::_has_linenumber_table",
			      "ConstMethodFlags::_misc_has_linenumber_table");
	l->cp_holder = OFF("ConstantPool::_pool_holder");
	l->cp_source_file = OFF("ConstantPool::_source_file_name_index",
				"InstanceKlass::_source_file_name_index");
	l->cp_size = OFF("ConstantPool");
	l->k_name = OFF("Klass::_name");
	l->sym_length = OFF("Symbol::_length");
	l->sym_body = OFF("Symbol::_body");
	/* the interpreter's frame: x86-64's words from rbp, or what the JVM publishes */
	u = OFF("frame::interpreter_frame_sender_sp_offset");
	l->if_sender_sp = u != HS_NONE ? (int32_t)u : -1;
	u = OFF("frame::interpreter_frame_method_offset");
	l->if_method = u != HS_NONE ? (int32_t)u : -3;
	u = OFF("frame::interpreter_frame_bcp_offset");
	l->if_bcp = u != HS_NONE ? (int32_t)u : -7;
	u = OFF("InvocationEntryBci");
	l->invocation_entry_bci = u != HS_NONE ? (int32_t)u : -1;
	l->unsigned5_x1 = l->version >= 21;
	l->nm_immutable_layout = l->nm_immutable != HS_NONE && l->nm_immutable_size != HS_NONE &&
				 l->cb_mutable != HS_NONE && l->cb_mutable_size != HS_NONE &&
				 l->cb_relocation_size != HS_NONE;
	l->scopes =
		l->nm_scopes_data != HS_NONE && l->nm_scopes_pcs != HS_NONE &&
		l->pc_pc_offset != HS_NONE && l->pc_scope_decode != HS_NONE &&
		l->pc_size != HS_NONE && l->version &&
		(l->nm_immutable_layout || (l->nm_deps != HS_NONE && l->nm_metadata != HS_NONE));
	dump_free(&d);
	{
		static const struct {
			const char *name;
			size_t at;
		} need[] = {
#define NEED(f, n) { n, offsetof(struct hs_layout, f) }
			NEED(ga_len, "GrowableArrayBase::_len"),
			NEED(ga_data, "GrowableArray<int>::_data"),
			NEED(heap_memory, "CodeHeap::_memory"),
			NEED(heap_segmap, "CodeHeap::_segmap"),
			NEED(heap_log2seg, "CodeHeap::_log2_segment_size"),
			NEED(vs_low_boundary, "VirtualSpace::_low_boundary"),
			NEED(vs_high, "VirtualSpace::_high"),
			NEED(vs_low, "VirtualSpace::_low"),
			NEED(hb_size, "HeapBlock"),
			NEED(cb_name, "CodeBlob::_name"),
			NEED(cb_frame_size, "CodeBlob::_frame_size"),
			NEED(cb_frame_complete, "CodeBlob::_frame_complete_offset"),
			NEED(cb_size, "CodeBlob::_size"),
			NEED(nm_method, "nmethod::_method"),
			NEED(m_const, "Method::_constMethod"),
			NEED(cm_constants, "ConstMethod::_constants"),
			NEED(cm_name_index, "ConstMethod::_name_index"),
			NEED(cm_size, "ConstMethod"),
			NEED(cp_holder, "ConstantPool::_pool_holder"),
			NEED(cp_size, "ConstantPool"),
			NEED(k_name, "Klass::_name"),
			NEED(sym_length, "Symbol::_length"),
			NEED(sym_body, "Symbol::_body"),
#undef NEED
		};

		if (!l->m_const || !l->cb_name || !l->k_name) {
			/* (not set yet: libjvm's initializers fill the tables in) */
			snprintf(why, wlen, "its tables are not filled in yet");
			return -EAGAIN;
		}
		if (!l->cc_heaps || !l->cc_low || !l->cc_high) {
			snprintf(why, wlen,
				 "it publishes no CodeCache::_heaps, _low_bound, _high_bound");
			return -ENOTSUP;
		}
		if (l->cb_code_begin == HS_NONE && l->cb_code_offset == HS_NONE) {
			snprintf(why, wlen,
				 "it publishes neither CodeBlob::_code_begin nor _code_offset");
			return -ENOTSUP;
		}
		for (size_t i = 0; i < ARRAY_SIZE(need); i++) {
			uint32_t v;

			memcpy(&v, (const char *)l + need[i].at, 4);
			if (v == HS_NONE) {
				snprintf(why, wlen, "it publishes no %s", need[i].name);
				return -ENOTSUP;
			}
		}
	}
	return 0;
}

/* ---- a process's memory */

int hs_mem(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EFAULT;
}
