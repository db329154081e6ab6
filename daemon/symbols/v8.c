// SPDX-License-Identifier: GPL-2.0-only
/*
 * V8's layout, from the v8dbg_ constants a binary publishes (V8's postmortem metadata, what a
 * debugger reads a core with), checked before use; and the pure parts of naming JavaScript
 * frames (docs/node.md). The process side is v8_names.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"
#include "v8.h"
#include "v8_int.h"

/* ---- the layout */

enum v8c {
	C_HEAP_MAP, C_MAP_TYPE, C_FN_SHARED, C_FP_FUNCTION, C_FP_CONTEXT, C_FP_BOFF,
	C_SFI_NAME, C_SFI_SCRIPT, C_SCRIPT_NAME, C_SCRIPT_SOURCE, C_SCRIPT_LINE_ENDS,
	C_STR_LENGTH, C_STR_CHARS, C_CONS_FIRST, C_CONS_SECOND, C_THIN_ACTUAL, C_SLICED_PARENT,
	C_SLICED_OFFSET, C_EXT_RESOURCE, C_FIXED_LENGTH,
	C_T_FUNCTION, C_T_SFI, C_T_FIRST_NONSTRING, C_T_SCOPE_INFO, C_T_SCRIPT, C_T_FIXED_ARRAY,
	C_REPR_MASK, C_ENC_MASK, C_ONE_BYTE, C_CONS_TAG, C_SLICED_TAG, C_THIN_TAG, C_EXT_TAG,
	C_SCOPE_FIRST_VARS, C_SCOPE_NLOCALS, C_HEAP_TAG, C_SMI_SHIFT, C_TAGGED_SIZE,
	C_SFI_FUNCTION_DATA, C_T_BYTECODE_ARRAY, C_T_CODE, C_CODE_DEOPT, C_CODE_SPT,
	C_KIND_MASK, C_KIND_INTERPRETED, C_KIND_BASELINE, C_DEOPT_NINLINED, C_DEOPT_SFI,
	C_BCA_DATA, C_FN_FEEDBACK, C_CELL_VALUE, C_T_FEEDBACK_VECTOR, C_FP_BCA,
	C_MAX
};

/* Each constant's name; one not in the binary is optional only if it has a default (bss
 * constants, zero, are published as undefined symbols by some builds). */
static const struct {
	const char *name;
	int64_t def;	/* INT64_MIN: required */
} consts[C_MAX] = {
	[C_HEAP_MAP] = { "v8dbg_class_HeapObject__map__Map", 0 },
	[C_MAP_TYPE] = { "v8dbg_class_Map__instance_type__uint16_t", INT64_MIN },
	[C_FN_SHARED] = { "v8dbg_class_JSFunction__shared__SharedFunctionInfo", INT64_MIN },
	[C_FP_FUNCTION] = { "v8dbg_off_fp_function", INT64_MIN },
	[C_FP_CONTEXT] = { "v8dbg_off_fp_context", INT64_MIN },
	[C_FP_BOFF] = { "v8dbg_off_fp_bytecode_offset", INT64_MIN },
	[C_SFI_NAME] = { "v8dbg_class_SharedFunctionInfo__name_or_scope_info__Object", INT64_MIN },
	[C_SFI_SCRIPT] = { "v8dbg_class_SharedFunctionInfo__script_or_debug_info__HeapObject",
			   INT64_MIN },
	[C_SCRIPT_NAME] = { "v8dbg_class_Script__name__Object", INT64_MIN },
	[C_SCRIPT_SOURCE] = { "v8dbg_class_Script__source__Object", INT64_MIN },
	[C_SCRIPT_LINE_ENDS] = { "v8dbg_class_Script__line_ends__Object", INT64_MIN },
	[C_STR_LENGTH] = { "v8dbg_class_String__length__int32_t", INT64_MIN },
	[C_STR_CHARS] = { "v8dbg_class_SeqOneByteString__chars__char", INT64_MIN },
	[C_CONS_FIRST] = { "v8dbg_class_ConsString__first__String", INT64_MIN },
	[C_CONS_SECOND] = { "v8dbg_class_ConsString__second__String", INT64_MIN },
	[C_THIN_ACTUAL] = { "v8dbg_class_ThinString__actual__String", INT64_MIN },
	[C_SLICED_PARENT] = { "v8dbg_class_SlicedString__parent__String", INT64_MIN },
	[C_SLICED_OFFSET] = { "v8dbg_class_SlicedString__offset__SMI", INT64_MIN },
	[C_EXT_RESOURCE] = { "v8dbg_class_ExternalString__resource__Object", INT64_MIN },
	[C_FIXED_LENGTH] = { "v8dbg_class_FixedArrayBase__length__SMI", INT64_MIN },
	[C_T_FUNCTION] = { "v8dbg_type_JSFunction__JS_FUNCTION_TYPE", INT64_MIN },
	[C_T_SFI] = { "v8dbg_type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", INT64_MIN },
	[C_T_FIRST_NONSTRING] = { "v8dbg_FirstNonstringType", INT64_MIN },
	[C_T_SCOPE_INFO] = { "v8dbg_type_ScopeInfo__SCOPE_INFO_TYPE", INT64_MIN },
	[C_T_SCRIPT] = { "v8dbg_type_Script__SCRIPT_TYPE", INT64_MIN },
	[C_T_FIXED_ARRAY] = { "v8dbg_type_FixedArray__FIXED_ARRAY_TYPE", INT64_MIN },
	[C_REPR_MASK] = { "v8dbg_StringRepresentationMask", INT64_MIN },
	[C_ENC_MASK] = { "v8dbg_StringEncodingMask", INT64_MIN },
	[C_ONE_BYTE] = { "v8dbg_OneByteStringTag", INT64_MIN },
	[C_CONS_TAG] = { "v8dbg_ConsStringTag", INT64_MIN },
	[C_SLICED_TAG] = { "v8dbg_SlicedStringTag", INT64_MIN },
	[C_THIN_TAG] = { "v8dbg_ThinStringTag", INT64_MIN },
	[C_EXT_TAG] = { "v8dbg_ExternalStringTag", INT64_MIN },
	[C_SCOPE_FIRST_VARS] = { "v8dbg_scopeinfo_idx_first_vars", INT64_MIN },
	[C_SCOPE_NLOCALS] = { "v8dbg_scopeinfo_idx_ncontextlocals", INT64_MIN },
	[C_HEAP_TAG] = { "v8dbg_HeapObjectTag", INT64_MIN },
	[C_SMI_SHIFT] = { "v8dbg_SmiShiftSize", INT64_MIN },
	[C_TAGGED_SIZE] = { "v8dbg_TaggedSize", INT64_MIN },
	[C_SFI_FUNCTION_DATA] = { "v8dbg_class_SharedFunctionInfo__function_data__Object",
				  INT64_MIN },
	[C_T_BYTECODE_ARRAY] = { "v8dbg_type_BytecodeArray__BYTECODE_ARRAY_TYPE", INT64_MIN },
	[C_T_CODE] = { "v8dbg_type_Code__CODE_TYPE", INT64_MIN },
	[C_CODE_DEOPT] = { "v8dbg_class_Code__deoptimization_data__FixedArray", INT64_MIN },
	[C_CODE_SPT] = { "v8dbg_class_Code__source_position_table__ByteArray", INT64_MIN },
	[C_KIND_MASK] = { "v8dbg_CodeKindFieldMask", INT64_MIN },
	[C_KIND_INTERPRETED] = { "v8dbg_CodeKindInterpretedFunction", INT64_MIN },
	[C_KIND_BASELINE] = { "v8dbg_CodeKindBaseline", INT64_MIN },
	[C_DEOPT_NINLINED] = { "v8dbg_DeoptimizationDataInlinedFunctionCountIndex", INT64_MIN },
	[C_DEOPT_SFI] = { "v8dbg_DeoptimizationDataSharedFunctionInfoIndex", INT64_MIN },
	[C_BCA_DATA] = { "v8dbg_class_BytecodeArray__data__uintptr_t", INT64_MIN },
	[C_FN_FEEDBACK] = { "v8dbg_class_JSFunction__raw_feedback_cell__FeedbackCell", INT64_MIN },
	[C_CELL_VALUE] = { "v8dbg_class_FeedbackCell__value__HeapObject", INT64_MIN },
	[C_T_FEEDBACK_VECTOR] = { "v8dbg_type_FeedbackVector__FEEDBACK_VECTOR_TYPE", INT64_MIN },
	[C_FP_BCA] = { "v8dbg_off_fp_bytecode_array", INT64_MIN },
};

#define V8_TYPE_PREFIX "v8dbg_type_"
#define V8_FUNCTION_TYPES 15

/* The largest object offset the engine takes (it reads headers of at most 128 bytes). */
#define V8_OFF_MAX 120

int v8_layout(const char *const *names, const int64_t *values, size_t n, uint32_t version,
	      struct v8_layout *l, char *why, size_t wlen)
{
	int64_t c[C_MAX], next_type;
	bool any = false;

	for (int i = 0; i < C_MAX; i++)
		c[i] = consts[i].def;
	for (size_t i = 0; i < n; i++) {
		if (strncmp(names[i], "v8dbg_", 6))
			continue;
		any = true;
		for (int k = 0; k < C_MAX; k++)
			if (!strcmp(names[i], consts[k].name))
				c[k] = values[i];
	}
	if (!any)
		return -ENOENT;
	for (int k = 0; k < C_MAX; k++) {
		if (c[k] == INT64_MIN) {
			snprintf(why, wlen, "V8 %u.%u.%u without %s", version >> 24,
				 version >> 16 & 0xff, version & 0xffff, consts[k].name);
			return -ENOTSUP;
		}
	}
	if (version < V8_VERSION_FROM || version >= V8_VERSION_TO) {
		snprintf(why, wlen, "V8 %u.%u.%u, which pcmon does not read (it reads 11.1.204 to 11.3)",
			 version >> 24, version >> 16 & 0xff, version & 0xffff);
		return -ENOTSUP;
	}
	/*
	 * JSFunction's subtypes (class constructors, the builtin constructors: 14 of them in
	 * 11.x) follow JS_FUNCTION_TYPE, unpublished: what a frame's function slot may hold.
	 * None of the types published may fall among them.
	 */
	next_type = c[C_T_FUNCTION] + V8_FUNCTION_TYPES;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(names[i], V8_TYPE_PREFIX, strlen(V8_TYPE_PREFIX)) &&
		    values[i] > c[C_T_FUNCTION] && values[i] < next_type)
			next_type = values[i];
	/* everything bounded before use: frame slots in BPF's window, offsets in a header read */
	if (c[C_HEAP_TAG] != 1 || c[C_SMI_SHIFT] != 31 || c[C_TAGGED_SIZE] != 8 ||
	    c[C_FP_FUNCTION] >= 0 || c[C_FP_FUNCTION] < -PCMON_JS_WIN_BELOW ||
	    c[C_FP_CONTEXT] >= 0 || c[C_FP_CONTEXT] < -PCMON_JS_WIN_BELOW ||
	    c[C_FP_BOFF] >= 0 || c[C_FP_BOFF] < -PCMON_JS_WIN_BELOW ||
	    c[C_FP_BCA] >= 0 || c[C_FP_BCA] < -PCMON_JS_WIN_BELOW ||
	    (c[C_FP_FUNCTION] | c[C_FP_CONTEXT] | c[C_FP_BOFF] | c[C_FP_BCA]) & 7 ||
	    c[C_T_FUNCTION] <= 0 || c[C_T_FUNCTION] > 0xffff || c[C_T_SFI] <= 0 ||
	    c[C_T_SFI] > 0xffff || c[C_SCOPE_FIRST_VARS] < 1 || c[C_SCOPE_FIRST_VARS] > 8 ||
	    c[C_SCOPE_NLOCALS] < 0 || c[C_SCOPE_NLOCALS] >= c[C_SCOPE_FIRST_VARS]) {
		snprintf(why, wlen, "V8 %u.%u.%u: its v8dbg_ constants are not what pcmon reads",
			 version >> 24, version >> 16 & 0xff, version & 0xffff);
		return -ENOTSUP;
	}
	if (c[C_KIND_MASK] != 15 || c[C_DEOPT_NINLINED] < 0 || c[C_DEOPT_NINLINED] > 16 ||
	    c[C_DEOPT_SFI] < 0 || c[C_DEOPT_SFI] > 16 || c[C_CODE_DEOPT] < 0 ||
	    c[C_CODE_DEOPT] > V8_OFF_MAX || c[C_CODE_SPT] < 0 || c[C_CODE_SPT] > V8_OFF_MAX - 40 ||
	    c[C_BCA_DATA] < 0 || c[C_BCA_DATA] > V8_OFF_MAX || c[C_SFI_FUNCTION_DATA] < 0 ||
	    c[C_SFI_FUNCTION_DATA] > V8_OFF_MAX || c[C_FN_SHARED] > V8_OFF_MAX - 24 ||
	    c[C_FN_FEEDBACK] < 0 || c[C_FN_FEEDBACK] > V8_OFF_MAX || c[C_CELL_VALUE] < 0 ||
	    c[C_CELL_VALUE] > V8_OFF_MAX) {
		snprintf(why, wlen, "V8 %u.%u.%u: its code's v8dbg_ constants are not what pcmon reads",
			 version >> 24, version >> 16 & 0xff, version & 0xffff);
		return -ENOTSUP;
	}
	for (int k = C_HEAP_MAP; k <= C_FIXED_LENGTH; k++) {
		if (k >= C_FP_FUNCTION && k <= C_FP_BOFF)
			continue;
		if (c[k] < 0 || c[k] > V8_OFF_MAX) {
			snprintf(why, wlen, "V8 %u.%u.%u: %s is %lld, out of bounds", version >> 24,
				 version >> 16 & 0xff, version & 0xffff, consts[k].name,
				 (long long)c[k]);
			return -ENOTSUP;
		}
	}
	*l = (struct v8_layout){
		.version = version,
		.o = {
			.fp_function = -c[C_FP_FUNCTION],
			.fp_context = -c[C_FP_CONTEXT],
			.fp_bytecode_offset = -c[C_FP_BOFF],
			.map = c[C_HEAP_MAP],
			.map_type = c[C_MAP_TYPE],
			.fn_shared = c[C_FN_SHARED],
			.type_fn_lo = c[C_T_FUNCTION],
			.type_fn_hi = next_type - 1,
			.type_sfi = c[C_T_SFI],
		},
		.sfi_name_or_scope = c[C_SFI_NAME],
		.sfi_script = c[C_SFI_SCRIPT],
		.script_name = c[C_SCRIPT_NAME],
		.script_source = c[C_SCRIPT_SOURCE],
		.script_line_ends = c[C_SCRIPT_LINE_ENDS],
		.str_length = c[C_STR_LENGTH],
		.str_chars = c[C_STR_CHARS],
		.cons_first = c[C_CONS_FIRST],
		.cons_second = c[C_CONS_SECOND],
		.thin_actual = c[C_THIN_ACTUAL],
		.sliced_parent = c[C_SLICED_PARENT],
		.sliced_offset = c[C_SLICED_OFFSET],
		.ext_resource = c[C_EXT_RESOURCE],
		.fixed_length = c[C_FIXED_LENGTH],
		.type_first_nonstring = c[C_T_FIRST_NONSTRING],
		.type_scope_info = c[C_T_SCOPE_INFO],
		.type_script = c[C_T_SCRIPT],
		.type_fixed_array = c[C_T_FIXED_ARRAY],
		.str_repr_mask = c[C_REPR_MASK],
		.str_enc_mask = c[C_ENC_MASK],
		.str_one_byte = c[C_ONE_BYTE],
		.str_cons = c[C_CONS_TAG],
		.str_sliced = c[C_SLICED_TAG],
		.str_thin = c[C_THIN_TAG],
		.str_external = c[C_EXT_TAG],
		.scope_first_vars = c[C_SCOPE_FIRST_VARS],
		.scope_nlocals = c[C_SCOPE_NLOCALS],
		/*
		 * 11.1 to 11.3's Code (what JSFunction.code points at) has its source position
		 * table, then the InstructionStream, then instruction_start, the flags (its kind in
		 * the low bits), builtin id and kind-specific flags, and instruction_size; a
		 * BytecodeArray, its length, constant pool, handler table and then its source
		 * position table. DeoptimizationData's literals follow the inlined function count,
		 * the inlining positions the function's own SharedFunctionInfo.
		 */
		.sfi_function_data = c[C_SFI_FUNCTION_DATA],
		.type_bytecode_array = c[C_T_BYTECODE_ARRAY],
		.type_code = c[C_T_CODE],
		.code_deopt = c[C_CODE_DEOPT],
		.code_spt = c[C_CODE_SPT],
		.code_start = c[C_CODE_SPT] + 16,
		.code_flags = c[C_CODE_SPT] + 24,
		.code_size = c[C_CODE_SPT] + 32,
		.kind_mask = c[C_KIND_MASK],
		.kind_interpreted = c[C_KIND_INTERPRETED],
		.kind_baseline = c[C_KIND_BASELINE],
		.deopt_ninlined = c[C_DEOPT_NINLINED],
		.deopt_literals = c[C_DEOPT_NINLINED] + 1,
		.deopt_sfi = c[C_DEOPT_SFI],
		.deopt_inlining = c[C_DEOPT_SFI] + 1,
		.bca_spt = c[C_FIXED_LENGTH] + 24,
		.bca_data = c[C_BCA_DATA],
		.cell_value = c[C_CELL_VALUE],
		.type_feedback_vector = c[C_T_FEEDBACK_VECTOR],
	};
	l->o.fn_feedback = c[C_FN_FEEDBACK];
	l->o.fp_bytecode_array = -c[C_FP_BCA];
	l->o.fn_code = l->o.fn_shared + 24; /* (after the context and the feedback cell) */
	l->o.code_start = l->code_start;
	l->o.code_size = l->code_size;
	return 0;
}

/* ---- ScopeInfo */

/*
 * V8 11.1 to 11.3's ScopeInfo (src/objects/scope-info.tq): flags, parameter count, context
 * local count, then the context locals' names (inline below 75 of them, else one hash
 * table), their infos, a saved class variable, the function variable (name, slot), the
 * inferred name, the position info (start, end), ... each there or not as the flags say.
 * The flags are not published: their bits are V8's of those versions.
 */
#define SCOPE_TYPE_MASK 0xf
#define SCOPE_HAS_SAVED_CLASS (1u << 10)
#define SCOPE_FUNCTION_VAR_SHIFT 12
#define SCOPE_HAS_INFERRED (1u << 14)
#define SCOPE_MAX_INLINED_NAMES 75
/* Scope types with position info: eval, function, module, script. */
#define SCOPE_EVAL 1
#define SCOPE_FUNCTION 2
#define SCOPE_MODULE 3
#define SCOPE_SCRIPT 4
#define SCOPE_TYPES 9

static bool is_smi(uint64_t w)
{
	return (w & 1) == 0;
}

static int64_t smi(uint64_t w)
{
	return (int64_t)w >> 32;
}

int v8_scope_decode(const uint64_t *w, size_t n, const struct v8_layout *l, struct v8_scope *s)
{
	unsigned int at = l->scope_first_vars, type;
	int64_t flags, nlocals;

	*s = (struct v8_scope){ .name = -1, .inferred = -1, .pos = -1, .need = at };
	if (n < at || !is_smi(w[0]) || !is_smi(w[l->scope_nlocals]))
		return -EINVAL;
	flags = smi(w[0]);
	nlocals = smi(w[l->scope_nlocals]);
	type = flags & SCOPE_TYPE_MASK;
	if (flags < 0 || nlocals < 0 || nlocals > 1 << 16 || type >= SCOPE_TYPES)
		return -EINVAL;
	at += nlocals < SCOPE_MAX_INLINED_NAMES ? nlocals : 1; /* names */
	at += nlocals; /* infos */
	if (flags & SCOPE_HAS_SAVED_CLASS)
		at++;
	if ((flags >> SCOPE_FUNCTION_VAR_SHIFT) & 3) {
		s->name = at;
		at += 2;
	}
	if (flags & SCOPE_HAS_INFERRED)
		s->inferred = at++;
	if (type == SCOPE_EVAL || type == SCOPE_FUNCTION || type == SCOPE_MODULE ||
	    type == SCOPE_SCRIPT) {
		s->pos = at;
		at += 2;
	}
	s->need = at;
	if (n < at)
		return 0; /* (the caller reads that many and asks again) */
	if (s->pos >= 0 && (!is_smi(w[s->pos]) || !is_smi(w[s->pos + 1]) ||
			    smi(w[s->pos]) < 0 || smi(w[s->pos]) > smi(w[s->pos + 1])))
		return -EINVAL;
	if (s->name >= 0 && (w[s->name] & 3) != 1 && w[s->name] != 0)
		return -EINVAL;
	return 0;
}

/* ---- names and lines */

void v8_proc_name(const char *script, const char *fn, unsigned int line, char *out, size_t len)
{
	const char *base = strrchr(script, '/');
	char s[256];
	size_t n;

	base = base ? base + 1 : script;
	if (!strncmp(base, "node:", 5))
		base += 5;
	snprintf(s, sizeof(s), "%s", base[0] ? base : "(unknown)");
	n = strlen(s);
	if (n > 3 && !strcmp(s + n - 3, ".js"))
		s[n - 3] = 0;
	else if (n > 4 && (!strcmp(s + n - 4, ".mjs") || !strcmp(s + n - 4, ".cjs")))
		s[n - 4] = 0;
	if (fn && fn[0])
		snprintf(out, len, "%s.%s", s, fn);
	else
		snprintf(out, len, "%s.(anonymous:%u)", s, line);
}

/* An unsigned VLQ of @t at *@at (V8's base/vlq.h: 7 bits a byte, the low ones first). */
static bool uvlq(const uint8_t *t, size_t len, size_t *at, uint64_t *out)
{
	unsigned int shift = 0;
	uint8_t b;

	*out = 0;
	do {
		if (*at >= len || shift > 63)
			return false;
		b = t[(*at)++];
		*out |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	return true;
}

/* A zigzag VLQ of @t at *@at (the sign in the lowest bit). */
static bool vlq(const uint8_t *t, size_t len, size_t *at, int64_t *out)
{
	uint64_t bits;

	if (!uvlq(t, len, at, &bits))
		return false;
	*out = (int64_t)(bits >> 1) ^ -(int64_t)(bits & 1);
	return true;
}

int v8_spt_find(const uint8_t *t, size_t len, uint32_t off, int64_t *pos)
{
	int64_t code = 0, src = 0, d, s;
	size_t at = 0;
	bool found = false;

	while (at < len) {
		if (!vlq(t, len, &at, &d) || !vlq(t, len, &at, &s))
			break;
		/* (the sign says whether the entry is a statement: the delta is never negative) */
		code += d >= 0 ? d : -(d + 1);
		src += s;
		if (code > off)
			break;
		*pos = src;
		found = true;
	}
	return found ? 0 : -ENOENT;
}

/* The length of the bytecode at @bc[@at] with its prefix, if any; 0 if it cannot be read. */
static unsigned int bytecode_len(const struct v8_layout *l, const uint8_t *bc, size_t n,
				 size_t at)
{
	unsigned int scale = 0, prefix = 0, op = bc[at];

	/* (the first four: Wide, ExtraWide and their debugger breaks, prefixes that scale the
	 * operands of the bytecode after them) */
	if (op < 4) {
		if (at + 1 >= n)
			return 0;
		scale = 1 + (op & 1);
		prefix = 1;
		op = bc[at + 1];
	}
	if (op >= l->nbytecodes || !l->bytecode_sizes[scale][op])
		return 0;
	return prefix + l->bytecode_sizes[scale][op];
}

int v8_baseline_boff(const struct v8_layout *l, const uint8_t *t, size_t tlen,
		     const uint8_t *bc, size_t n, uint32_t off, int64_t *boff)
{
	uint64_t end, len;
	size_t at = 0, b = 0;

	if (!l->nbytecodes || !uvlq(t, tlen, &at, &end))
		return -ENOENT;
	if (off < end) {
		*boff = -1;
		return 0;
	}
	while (b < n) {
		unsigned int blen = bytecode_len(l, bc, n, b);

		if (!blen || !uvlq(t, tlen, &at, &len))
			return -ENOENT;
		end += len;
		if (off < end) {
			*boff = (int64_t)b;
			return 0;
		}
		b += blen;
	}
	return -ENOENT;
}

unsigned int v8_line_of(const uint32_t *ends, size_t n, uint32_t pos)
{
	size_t lo = 0, hi = n;

	/* the first line whose end is at or after pos */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ends[mid] < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- the binary */

/* Symbols a V8 binary is known by, with their values read from its file. */
struct v8_syms {
	char **names;
	int64_t *values;
	size_t n, cap, cap_v;
	uint32_t version[4];	/* major, minor, build, patch (0: not found) */
	uint8_t sizes[V8_OPERAND_SCALES * V8_BYTECODES_MAX];	/* kBytecodeSizes */
	size_t nsizes;
};

#define V8_BYTECODE_SIZES "_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE"

static const char *const version_syms[4] = {
	"_ZN2v88internal7Version6major_E", "_ZN2v88internal7Version6minor_E",
	"_ZN2v88internal7Version6build_E", "_ZN2v88internal7Version6patch_E",
};

/* The int at @sym's address in the file (0 in a section with no bits: .bss). */
static bool sym_int(Elf *elf, const GElf_Sym *sym, int64_t *v)
{
	Elf_Scn *scn = elf_getscn(elf, sym->st_shndx);
	GElf_Shdr sh;
	Elf_Data *d;
	int32_t x;

	if (!scn || !gelf_getshdr(scn, &sh))
		return false;
	if (sh.sh_type == SHT_NOBITS) {
		*v = 0;
		return true;
	}
	d = elf_rawdata(scn, NULL);
	if (!d || sym->st_value < sh.sh_addr || sym->st_value - sh.sh_addr + 4 > d->d_size)
		return false;
	memcpy(&x, (const char *)d->d_buf + (sym->st_value - sh.sh_addr), 4);
	*v = x;
	return true;
}

/* The bytes at @sym's address in the file, as long as the symbol says: true if read whole. */
static bool sym_bytes(Elf *elf, const GElf_Sym *sym, uint8_t *out, size_t max, size_t *n)
{
	Elf_Scn *scn = elf_getscn(elf, sym->st_shndx);
	GElf_Shdr sh;
	Elf_Data *d;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || sym->st_size > max)
		return false;
	d = elf_rawdata(scn, NULL);
	if (!d || sym->st_value < sh.sh_addr || sym->st_value - sh.sh_addr > d->d_size ||
	    sym->st_size > d->d_size - (sym->st_value - sh.sh_addr))
		return false;
	memcpy(out, (const char *)d->d_buf + (sym->st_value - sh.sh_addr), sym->st_size);
	*n = sym->st_size;
	return true;
}

/*
 * The bytecodes' lengths @f found into @l: as many bytecodes as the table has for each of the
 * three operand scales, whose first four (the prefixes) are a byte long at every scale; else
 * none (baseline code's lines are not read).
 */
static void layout_bytecodes(const struct v8_syms *f, struct v8_layout *l)
{
	size_t count = f->nsizes / V8_OPERAND_SCALES;

	l->nbytecodes = 0;
	if (f->nsizes % V8_OPERAND_SCALES || count <= 4 || count > V8_BYTECODES_MAX)
		return;
	for (int s = 0; s < V8_OPERAND_SCALES; s++)
		for (int op = 0; op < 4; op++)
			if (f->sizes[s * count + op] != 1)
				return;
	for (int s = 0; s < V8_OPERAND_SCALES; s++)
		memcpy(l->bytecode_sizes[s], f->sizes + s * count, count);
	l->nbytecodes = count;
}

static void look_in_symtab(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, struct v8_syms *f)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; d && i < n; i++) {
		GElf_Sym sym;
		const char *name;
		int64_t v;

		if (!gelf_getsym(d, i, &sym) || sym.st_shndx == SHN_UNDEF ||
		    sym.st_shndx >= SHN_LORESERVE)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || (name[0] != 'v' && name[0] != '_'))
			continue;
		if (!strcmp(name, V8_BYTECODE_SIZES)) {
			sym_bytes(elf, &sym, f->sizes, sizeof(f->sizes), &f->nsizes);
			continue;
		}
		if (!strncmp(name, "_ZN2v88internal7Version", 23)) {
			for (int k = 0; k < 4; k++)
				if (!strcmp(name, version_syms[k]) && sym_int(elf, &sym, &v))
					f->version[k] = (uint32_t)v;
			continue;
		}
		if (strncmp(name, "v8dbg_", 6) || !sym_int(elf, &sym, &v))
			continue;
		if (GROW(f->names, f->cap, f->n + 1) || GROW(f->values, f->cap_v, f->n + 1))
			return;
		if (!(f->names[f->n] = strdup(name)))
			return;
		f->values[f->n++] = v;
	}
}

int v8_layout_of_file(int fd, struct v8_layout *l, char *why, size_t wlen)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	struct v8_syms f = { 0 };
	Elf_Scn *scn = NULL;
	uint32_t version;
	int r;

	if (!elf)
		return -ENOENT;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM))
			look_in_symtab(elf, scn, &sh, &f);
	}
	elf_end(elf);
	version = V8_VERSION(f.version[0], f.version[1], f.version[2] > 0xffff ? 0xffff : f.version[2]);
	r = v8_layout((const char *const *)f.names, f.values, f.n, version, l, why, wlen);
	if (!r)
		layout_bytecodes(&f, l);
	if (r == -ENOTSUP && !f.version[0])
		snprintf(why, wlen, "a V8 that does not say its version (no v8::internal::Version)");
	for (size_t i = 0; i < f.n; i++)
		free(f.names[i]);
	free(f.names);
	free(f.values);
	return r;
}

