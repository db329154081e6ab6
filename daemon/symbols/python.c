// SPDX-License-Identifier: GPL-2.0-only
/*
 * CPython frames (docs/python.md). BPF reads a thread's chain of _PyInterpreterFrame at
 * sample time and sends, per frame, its code object's address and instruction; here the
 * code objects are named from the process's memory (qualified name, file, first line, line
 * table) and cached, and the frames take the place of the interpreter's C activations.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "python.h"
#include "python_layouts.h"
#include "procmaps.h"
#include "sym.h"
#include "util.h"

/* What every version's entry has: its objects' fields (python_layouts.h, PY3<minor>_*) */
#define LAYOUT_OBJECTS(v)                                                                  \
	.ob_type = PY##v##_OB_TYPE, .ob_size = PY##v##_OB_SIZE,                              \
	.bytes_sval = PY##v##_BYTES_SVAL, .co_firstlineno = PY##v##_CO_FIRSTLINENO,          \
	.co_filename = PY##v##_CO_FILENAME, .co_linetable = PY##v##_CO_LINETABLE,            \
	.str_length = PY##v##_STR_LENGTH, .str_state = PY##v##_STR_STATE,                    \
	.str_ascii = PY##v##_STR_ASCII_DATA, .str_compact = PY##v##_STR_COMPACT_DATA,        \
	.str_ptr = PY##v##_STR_DATA_PTR, .code_size = PY##v##_CODE_SIZE,                     \
	.str_size = PY##v##_STR_SIZE

/*
 * 3.8-3.10: a thread's frames are a chain of PyFrameObject from PyThreadState.frame (there is
 * no _PyCFrame to go through: PCMON_PY_NO_CFRAME), each run by an activation of the loop of
 * its own; a thread state is known by its thread_id, pthread_self(); no qualified names.
 */
#define LAYOUT_FRAMEOBJ(v, lastiflags, linetab)                                            \
	.o = {                                                                               \
		.rt_interp_head = PY##v##_RT_INTERP_HEAD,                                    \
		.is_threads_head = PY##v##_IS_THREADS_HEAD,                                  \
		.ts_next = PY##v##_TS_NEXT,                                                  \
		.ts_native_id = PY##v##_TS_THREAD_ID,                                        \
		.ts_cframe = PCMON_PY_NO_CFRAME,                                             \
		.cf_current = PY##v##_TS_FRAME,                                              \
		.fr_lo = PY##v##_FR_PREVIOUS,                                                \
		.fr_size = (PY##v##_FR_LASTI + 4 - PY##v##_FR_PREVIOUS + 7) & ~7,            \
		.fr_code = PY##v##_FR_CODE - PY##v##_FR_PREVIOUS,                            \
		.fr_previous = 0,                                                            \
		.fr_prev_instr = PY##v##_FR_LASTI - PY##v##_FR_PREVIOUS,                     \
		.flags = PCMON_PYF_PTHREAD_ID | (lastiflags),                                \
	},                                                                                   \
	LAYOUT_OBJECTS(v),                                                                   \
	.co_qualname = PY##v##_CO_NAME,                                                      \
	.co_hdr = PY##v##_CODE_SIZE,                                                         \
	.frame_size = PY##v##_FRAME_SIZE,                                                    \
	.lines = (linetab)

static const struct py_layout layouts[] = {
	{
		/* (3.8 to 3.10 have no Py_Version: their file's name says which) */
		.from = 0x03080000,
		.to = 0x03090000,
		LAYOUT_FRAMEOBJ(38, PCMON_PYF_LASTI | PCMON_PYF_LASTI_BYTES, PY_LINES_LNOTAB),
	},
	{
		.from = 0x03090000,
		.to = 0x030a0000,
		LAYOUT_FRAMEOBJ(39, PCMON_PYF_LASTI | PCMON_PYF_LASTI_BYTES, PY_LINES_LNOTAB),
	},
	{
		.from = 0x030a0000,
		.to = 0x030b0000,
		LAYOUT_FRAMEOBJ(310, PCMON_PYF_LASTI, PY_LINES_310),
	},
	{
		.from = 0x030b00f0, /* 3.11.0 final: the betas moved things */
		.to = 0x030c0000,
		.o = {
			.rt_interp_head = PY311_RT_INTERP_HEAD,
			.is_threads_head = PY311_IS_THREADS_HEAD,
			.ts_next = PY311_TS_NEXT,
			.ts_native_id = PY311_TS_NATIVE_ID,
			.ts_cframe = PY311_TS_CFRAME,
			.cf_current = PY311_CF_CURRENT,
			.fr_lo = PY311_FR_CODE,
			.fr_size = 48,
			.fr_code = PY311_FR_CODE - PY311_FR_CODE,
			.fr_previous = PY311_FR_PREVIOUS - PY311_FR_CODE,
			.fr_prev_instr = PY311_FR_PREV_INSTR - PY311_FR_CODE,
			.fr_is_entry = PY311_FR_IS_ENTRY - PY311_FR_CODE,
			.co_code = PY311_CO_CODE,
		},
		LAYOUT_OBJECTS(311),
		.co_qualname = PY311_CO_QUALNAME,
		.co_hdr = PY311_CO_CODE,
		.lines = PY_LINES_LOCATIONS,
	},
	{
		/* 3.12: 3.11's design; each activation of the loop starts with a shim frame */
		.from = 0x030c00f0,
		.to = 0x030d0000,
		.o = {
			.rt_interp_head = PY312_RT_INTERP_HEAD,
			.is_threads_head = PY312_IS_THREADS_HEAD,
			.ts_next = PY312_TS_NEXT,
			.ts_native_id = PY312_TS_NATIVE_ID,
			.ts_cframe = PY312_TS_CFRAME,
			.cf_current = PY312_CF_CURRENT,
			.fr_lo = PY312_FR_CODE,
			.fr_size = (PY312_FR_OWNER + 1 - PY312_FR_CODE + 7) & ~7,
			.fr_code = 0,
			.fr_previous = PY312_FR_PREVIOUS - PY312_FR_CODE,
			.fr_prev_instr = PY312_FR_PREV_INSTR - PY312_FR_CODE,
			.fr_is_entry = PY312_FR_OWNER - PY312_FR_CODE,
			.fr_shim_owner = PY312_FRAME_OWNED_BY_CSTACK,
			.co_code = PY312_CO_CODE,
		},
		LAYOUT_OBJECTS(312),
		.co_qualname = PY312_CO_QUALNAME,
		.co_hdr = PY312_CO_CODE,
		.lines = PY_LINES_LOCATIONS,
	},
};

/* Longest name, file or line table read from a process. */
#define PY_STR_MAX 1024
#define PY_TAB_MAX (64 * 1024)

/* A code object of a process, as last read. */
struct py_code {
	uint64_t sum;		/* its header's fields that say what it is: unchanged, same code */
	uint32_t gen;		/* the drain it was last checked in (0: never read, or forgotten) */
	uint32_t name, file;	/* sym string ids: the procedure's name, the file */
	int firstlineno;
	uint8_t *tab;		/* its line table */
	uint32_t ntab;
	uint8_t lines;		/* enum py_lines: which kind */
};

/*
 * All pcmon keeps of one process: made at its first look, let go PY_FORGET_NS after it
 * exits (or at once when its pid is taken by a new process), so that a machine's churn of
 * processes leaves nothing behind.
 */
struct py_proc {
	uint32_t pid;
	uint32_t looked[2];	/* the last two images looked at, epoch + 1 (an exec's old
				 * image still streams in beside the new) */
	bool told;		/* a warning was given about it */
	bool unsupported;	/* a CPython pcmon has no offsets for */
	bool found;		/* an interpreter, laid out as l says */
	struct py_layout l;
	uint64_t code_type;	/* &PyCode_Type in it: what a code object's type reads */
	struct itab *keys;	/* code object addresses read, ids into codes */
	struct py_code *codes;
	size_t cap_codes;
};

struct py {
	struct sym *sym;
	struct pidtab *procs;	/* struct py_proc by pid */
	struct { uint32_t pid, epoch, tries; uint64_t at; } *pending;	/* py_look_pending() */
	size_t npending, cap_pending;
	uint32_t gen;
	uint32_t eval_name;	/* string id of PY_EVAL_FN */
};

struct py *py_new(struct sym *s)
{
	struct py *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->sym = s;
	p->gen = 1;
	if (!(p->procs = pidtab_new()) || sym_intern_str(s, PY_EVAL_FN, &p->eval_name)) {
		py_free(p);
		return NULL;
	}
	return p;
}

static void proc_free(struct py_proc *e)
{
	for (uint32_t i = 0; e->keys && i < itab_count(e->keys); i++)
		free(e->codes[i].tab);
	itab_free(e->keys);
	free(e->codes);
	free(e);
}

void py_free(struct py *p)
{
	struct py_proc *e;
	size_t it = 0;

	if (!p)
		return;
	while (p->procs && (e = pidtab_next(p->procs, &it)))
		proc_free(e);
	pidtab_free(p->procs);
	free(p->pending);
	free(p);
}

void py_next_gen(struct py *p)
{
	if (++p->gen == 0)
		p->gen = 1;
}

static struct py_proc *proc_of(const struct py *p, uint32_t pid)
{
	return pidtab_get(p->procs, pid);
}

/* @pid's entry, made if it has none: NULL only without memory. */
static struct py_proc *proc_make(struct py *p, uint32_t pid)
{
	struct py_proc *e = proc_of(p, pid);

	if (e)
		return e;
	e = calloc(1, sizeof(*e));
	if (!e || pidtab_put(p->procs, pid, e)) {
		free(e);
		return NULL;
	}
	e->pid = pid;
	return e;
}

void py_forget(struct py *p, uint32_t pid)
{
	struct py_proc *e = pidtab_del(p->procs, pid);

	if (e)
		proc_free(e);
}

void py_exited(struct py *p, uint32_t pid, uint64_t now)
{
	struct py_proc *e;
	uint32_t gone;

	py_set_pending(p, pid, 0, false);
	while ((e = pidtab_expire(p->procs, now - MIN(now, PY_FORGET_NS), &gone)))
		proc_free(e);
	/* (no memory: it is let go when its pid comes back) */
	pidtab_exited(p->procs, pid, now);
}

uint32_t py_procs_kept(const struct py *p)
{
	return pidtab_count(p->procs);
}

bool py_first_look(struct py *p, uint32_t pid, uint32_t epoch)
{
	struct py_proc *e = proc_make(p, pid);

	if (!e)
		return false; /* (no memory: no look, its samples flagged python_unknown) */
	if (e->looked[0] == epoch + 1 || e->looked[1] == epoch + 1)
		return false;
	e->looked[1] = e->looked[0];
	e->looked[0] = epoch + 1;
	return true;
}

bool py_set_pending(struct py *p, uint32_t pid, uint32_t epoch, bool on)
{
	size_t i;

	for (i = 0; i < p->npending; i++)
		if (p->pending[i].pid == pid)
			break;
	if (!on) { /* (found, or not a launcher: only that image's) */
		if (i < p->npending && (!epoch || p->pending[i].epoch == epoch))
			p->pending[i] = p->pending[--p->npending];
		return false;
	}
	if (i == p->npending) {
		if (GROW(p->pending, p->cap_pending, p->npending + 1))
			return false; /* (no memory: the look it made stands) */
		p->pending[p->npending++] = (typeof(*p->pending)){ pid, epoch, 0, 0 };
	} else if (p->pending[i].epoch != epoch) {
		p->pending[i] = (typeof(*p->pending)){ pid, epoch, 0, 0 };
	}
	if (p->pending[i].tries < PY_LOOK_TRIES)
		return true;
	p->pending[i] = p->pending[--p->npending]; /* given up */
	return false;
}

bool py_look_pending(struct py *p, uint32_t pid, uint32_t epoch)
{
	uint64_t now = now_ns();

	for (size_t i = 0; i < p->npending; i++) {
		if (p->pending[i].pid != pid || p->pending[i].epoch != epoch)
			continue;
		/* (at most one a millisecond: the address map is read again at each) */
		if (now - p->pending[i].at < 1000000)
			return false;
		p->pending[i].at = now;
		return p->pending[i].tries++ < PY_LOOK_TRIES;
	}
	return false;
}

void py_set_unsupported(struct py *p, uint32_t pid)
{
	struct py_proc *e = proc_make(p, pid);

	if (e)
		e->unsupported = true;
}

bool py_unsupported(const struct py *p, uint32_t pid)
{
	const struct py_proc *e = proc_of(p, pid);

	return e && e->unsupported;
}

bool py_tell_once(struct py *p, uint32_t pid)
{
	struct py_proc *e = proc_make(p, pid);

	if (!e || e->told)
		return false;
	e->told = true;
	return true;
}

static int mem_read(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EFAULT;
}

static uint64_t u64_at(const uint8_t *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* ---- finding the interpreter */

struct found {
	uint64_t runtime, version, code_type;	/* addresses in the object (ELF vaddrs) */
	uint64_t str_type, frame_type;
	uint64_t base_vaddr;			/* its first loadable segment's */
};

static void look_in_symtab(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, struct found *f)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; d && i < n; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(d, i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || (name[0] != '_' && name[0] != 'P'))
			continue;
		if (!strcmp(name, "_PyRuntime"))
			f->runtime = sym.st_value;
		else if (!strcmp(name, "Py_Version"))
			f->version = sym.st_value;
		else if (!strcmp(name, "PyCode_Type"))
			f->code_type = sym.st_value;
		else if (!strcmp(name, "PyUnicode_Type"))
			f->str_type = sym.st_value;
		else if (!strcmp(name, "PyFrame_Type"))
			f->frame_type = sym.st_value;
	}
}

/* The symbols of the object open at @fd; false if it has no _PyRuntime. */
static bool look_in_object(int fd, struct found *f)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	size_t nph = 0;

	memset(f, 0, sizeof(*f));
	if (!elf)
		return false;
	f->base_vaddr = UINT64_MAX;
	if (!elf_getphdrnum(elf, &nph)) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && ph.p_offset == 0)
				f->base_vaddr = ph.p_vaddr & ~(uint64_t)0xfff;
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM))
			look_in_symtab(elf, scn, &sh, f);
	}
	elf_end(elf);
	return f->runtime && f->base_vaddr != UINT64_MAX;
}

/*
 * The version an interpreter older than 3.11 (no Py_Version) is, from its file's name,
 * "python3.X" or "libpython3.X.so...", as 0x030X0000; 0 if it does not say.
 */
static uint32_t version_of_name(const char *path)
{
	const char *base = strrchr(path, '/');
	unsigned int minor = 0;
	int n = 0;

	base = base ? base + 1 : path;
	if (!strncmp(base, "lib", 3))
		base += 3;
	if (sscanf(base, "python3.%u%n", &minor, &n) != 1 || minor > 99 ||
	    (base[n] && base[n] != '.' && base[n] != 'm' && base[n] != 'd'))
		return 0;
	return 0x03000000u | minor << 16;
}

static const struct py_layout *layout_of(uint32_t version)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (version >= layouts[i].from && version < layouts[i].to)
			return &layouts[i];
	return NULL;
}

/* Where PyTypeObject.tp_basicsize is (PyVarObject, tp_name): every version alike. */
#define PY_TYPE_BASICSIZE 32

/*
 * Is the interpreter of @pid laid out as @l says? A table is per minor version, from the
 * headers of one build: the basic sizes its PyCode_Type and PyUnicode_Type report (its own
 * sizeof) must be the table's, or its fields are not where the table has them (a patch
 * release that moved them, a build configured otherwise). 0, or -EPROTO with @why.
 */
static int layout_matches(uint32_t pid, const struct py_layout *l, uint64_t code_type,
			  uint64_t str_type, uint64_t frame_type, char *why, size_t len)
{
	int64_t code = 0, str = 0, frame = 0;

	if (l->frame_size && frame_type &&
	    !mem_read(pid, frame_type + PY_TYPE_BASICSIZE, &frame, sizeof(frame)) &&
	    frame != l->frame_size) {
		snprintf(why, len, "its frame objects are %lld bytes, pcmon's table has %u",
			 (long long)frame, l->frame_size);
		return -EPROTO;
	}

	if ((l->code_size && mem_read(pid, code_type + PY_TYPE_BASICSIZE, &code, sizeof(code))) ||
	    (l->str_size && str_type &&
	     mem_read(pid, str_type + PY_TYPE_BASICSIZE, &str, sizeof(str)))) {
		snprintf(why, len, "its type objects could not be read");
		return -EPROTO;
	}
	if (l->code_size && code != l->code_size) {
		snprintf(why, len, "its code objects are %lld bytes, pcmon's table has %u",
			 (long long)code, l->code_size);
		return -EPROTO;
	}
	if (l->str_size && str_type && str != l->str_size) {
		snprintf(why, len, "its str objects are %lld bytes, pcmon's table has %u",
			 (long long)str, l->str_size);
		return -EPROTO;
	}
	return 0;
}

/* ---- _Py_DebugOffsets (3.13 on) */

/*
 * How _Py_DebugOffsets is laid out: after its cookie, version and free_threaded words, one
 * group of 64-bit words per struct, most of them led by the struct's size. A version's
 * layout is the word count of each group in order (a group it lacks counts 0); a field pcmon
 * reads is (group, index in the group). Counted from CPython's
 * Include/internal/pycore_runtime.h (3.13) and pycore_debug_offsets.h (3.14).
 */
enum dbg_group {
	DG_HEAD, DG_RUNTIME, DG_INTERP, DG_THREAD, DG_FRAME, DG_CODE, DG_OBJECT, DG_TYPE,
	DG_TUPLE, DG_LIST, DG_SET, DG_DICT, DG_FLOAT, DG_LONG, DG_BYTES, DG_UNICODE, DG_GC,
	DG_MAX
};

struct dbg_map {
	uint32_t from;			/* the first PY_VERSION_HEX laid out so */
	uint8_t words[DG_MAX];
	uint8_t threads_head;		/* the index of PyInterpreterState.threads.head */
	uint8_t frame_owner;		/* ... of _PyInterpreterFrame.owner */
	uint8_t shim_owner;		/* the lowest owner of a frame that is not a function's */
};

static const struct dbg_map dbg_maps[] = {
	/* 3.13: the shim each activation of the loop starts with is FRAME_OWNED_BY_CSTACK, 3 */
	{ 0x030d0000, { 3, 3, 13, 9, 6, 10, 2, 4, 3, 3, 0, 3, 2, 3, 3, 4, 2 }, 3, 5, 3 },
	/* 3.14: threads.main after threads.head, frame.stackpointer, the set group (and
	 * generator and remote debugging groups after gc, not read); shims are owned by
	 * FRAME_OWNED_BY_INTERPRETER (3) or FRAME_OWNED_BY_CSTACK (4) */
	{ 0x030e0000, { 3, 3, 14, 9, 7, 10, 2, 4, 3, 3, 4, 3, 2, 3, 3, 4, 2 }, 3, 5, 3 },
};

/* Where word @idx of group @g is in the struct, for map @m. */
static size_t dbg_at(const struct dbg_map *m, enum dbg_group g, unsigned int idx)
{
	size_t w = 0;

	for (int i = 0; i < (int)g; i++)
		w += m->words[i];
	return (w + idx) * 8;
}

struct dbg_read {
	const struct dbg_map *m;
	const uint8_t *buf;
	size_t len;
	const char *bad;	/* the first field found out of bounds */
};

/*
 * The offset published for field @idx of group @g, checked to leave @width bytes inside its
 * struct (the group's size, its word 0).
 */
static uint16_t dbg_field(struct dbg_read *r, enum dbg_group g, unsigned int idx, unsigned int width,
			  const char *name)
{
	size_t at = dbg_at(r->m, g, idx), size_at = dbg_at(r->m, g, 0);
	uint64_t v, size;

	if (at + 8 > r->len || idx >= r->m->words[g]) {
		r->bad = r->bad ? r->bad : name;
		return 0;
	}
	v = u64_at(r->buf, at);
	size = u64_at(r->buf, size_at);
	if (v + width > size || v > 0xfff0) {
		r->bad = r->bad ? r->bad : name;
		return 0;
	}
	return (uint16_t)v;
}

int py_layout_published(const uint8_t *buf, size_t len, uint32_t version, struct py_layout *l,
			char *why, size_t wlen)
{
	const struct dbg_map *m = NULL;
	struct dbg_read r = { .buf = buf, .len = len };
	uint16_t prev, exec, instr, owner, lo, hi, ascii, cur;
	uint64_t v;

	if (len < 24 || memcmp(buf, "xdebugpy", 8)) {
		snprintf(why, wlen, "no _Py_DebugOffsets at _PyRuntime");
		return -ENOTSUP;
	}
	v = u64_at(buf, 8);
	if (version && v != version) {
		snprintf(why, wlen, "_Py_DebugOffsets says version %#llx, Py_Version %#x",
			 (unsigned long long)v, version);
		return -ENOTSUP;
	}
	if (u64_at(buf, 16)) {
		snprintf(why, wlen, "a free-threaded build, whose objects pcmon does not read");
		return -ENOTSUP;
	}
	for (size_t i = 0; i < sizeof(dbg_maps) / sizeof(dbg_maps[0]); i++)
		if (v >= dbg_maps[i].from)
			m = &dbg_maps[i];
	if (!m) {
		snprintf(why, wlen, "_Py_DebugOffsets of version %#llx, older than pcmon reads",
			 (unsigned long long)v);
		return -ENOTSUP;
	}
	r.m = m;
	memset(l, 0, sizeof(*l));
	l->from = l->to = (uint32_t)v;
	l->to++;
	/* the runtime group has no size word: its fields are checked against the whole */
	v = u64_at(buf, dbg_at(m, DG_RUNTIME, 2));
	l->o.rt_interp_head = v < 0xfff0 ? (uint16_t)v : 0;
	if (!l->o.rt_interp_head)
		r.bad = "runtime_state.interpreters_head";
	l->o.is_threads_head = dbg_field(&r, DG_INTERP, m->threads_head, 8, "interpreter_state.threads_head");
	l->o.ts_next = dbg_field(&r, DG_THREAD, 2, 8, "thread_state.next");
	cur = dbg_field(&r, DG_THREAD, 4, 8, "thread_state.current_frame");
	l->o.ts_native_id = dbg_field(&r, DG_THREAD, 6, 8, "thread_state.native_thread_id");
	l->o.ts_cframe = PCMON_PY_NO_CFRAME;
	l->o.cf_current = cur;
	prev = dbg_field(&r, DG_FRAME, 1, 8, "interpreter_frame.previous");
	exec = dbg_field(&r, DG_FRAME, 2, 8, "interpreter_frame.executable");
	instr = dbg_field(&r, DG_FRAME, 3, 8, "interpreter_frame.instr_ptr");
	owner = dbg_field(&r, DG_FRAME, m->frame_owner, 1, "interpreter_frame.owner");
	l->co_filename = dbg_field(&r, DG_CODE, 1, 8, "code_object.filename");
	l->co_qualname = dbg_field(&r, DG_CODE, 3, 8, "code_object.qualname");
	l->co_linetable = dbg_field(&r, DG_CODE, 4, 8, "code_object.linetable");
	l->co_firstlineno = dbg_field(&r, DG_CODE, 5, 4, "code_object.firstlineno");
	l->o.co_code = dbg_field(&r, DG_CODE, 9, 2, "code_object.co_code_adaptive");
	l->co_hdr = l->o.co_code;
	l->ob_type = dbg_field(&r, DG_OBJECT, 1, 8, "pyobject.ob_type");
	l->ob_size = dbg_field(&r, DG_BYTES, 1, 8, "bytes_object.ob_size");
	l->bytes_sval = dbg_field(&r, DG_BYTES, 2, 1, "bytes_object.ob_sval");
	l->str_state = dbg_field(&r, DG_UNICODE, 1, 4, "unicode_object.state");
	l->str_length = dbg_field(&r, DG_UNICODE, 2, 8, "unicode_object.length");
	ascii = (uint16_t)u64_at(buf, MIN(dbg_at(m, DG_UNICODE, 3), len - 8));
	if (r.bad) {
		snprintf(why, wlen, "_Py_DebugOffsets: %s is not where a struct's fields can be", r.bad);
		return -ENOTSUP;
	}
	/* a frame's fields are read in one go, a code object's header too */
	lo = MIN(MIN(prev, exec), MIN(instr, owner));
	hi = MAX(MAX(prev, exec), instr) + 8;
	hi = MAX(hi, owner + 1);
	if (hi - lo > PCMON_PY_FRAME_WINDOW || l->co_hdr > PY_CODE_HDR_MAX ||
	    l->co_linetable + 8 > l->co_hdr || l->co_filename + 8 > l->co_hdr ||
	    l->co_qualname + 8 > l->co_hdr || l->co_firstlineno + 4 > l->co_hdr || ascii < 24 ||
	    ascii + 16 + 8 > PY_STR_HDR_MAX || l->str_state + 4 > PY_STR_HDR_MAX ||
	    l->str_length + 8 > PY_STR_HDR_MAX) {
		snprintf(why, wlen, "_Py_DebugOffsets: a frame or a code object wider than pcmon reads");
		return -ENOTSUP;
	}
	l->o.fr_lo = lo;
	l->o.fr_size = (uint16_t)((hi - lo + 7) & ~7u);
	l->o.fr_code = exec - lo;
	l->o.fr_previous = prev - lo;
	l->o.fr_prev_instr = instr - lo;
	l->o.fr_is_entry = owner - lo;
	l->o.fr_shim_owner = m->shim_owner;
	/* PyCompactUnicodeObject: PyASCIIObject, utf8_length, utf8; then the characters */
	l->str_ascii = ascii;
	l->str_compact = ascii + 16;
	l->str_ptr = ascii + 16;
	return 0;
}

/* ---- finding the interpreter */

/*
 * Look for the interpreter in the objects the process maps whose name says Python (the
 * python3.X executable, which has libpython linked in on Debian, or libpython3.X.so):
 * _PyRuntime is where its state starts, Py_Version (3.11 on) says which version it is.
 * A version pcmon has no table for is read with the offsets it publishes, if it does.
 */
static int find_in(uint32_t pid, const char *path, uint64_t start, uint64_t end,
		   struct pcmon_pyproc *out, struct py_layout *lo, uint64_t *code_type, char *why,
		   size_t len)
{
	uint8_t dbg[PY_DEBUG_OFFSETS_MAX];
	char whyd[200];
	const struct py_layout *l;
	struct found f;
	uint32_t version = 0;
	uint64_t bias;
	int fd;

	fd = procmaps_open(pid, start, end, path);
	if (fd < 0)
		return -ENOENT;
	if (!look_in_object(fd, &f)) {
		close(fd);
		return -ENOENT;
	}
	close(fd);
	bias = start - f.base_vaddr;
	if (f.version && mem_read(pid, bias + f.version, &version, sizeof(version)))
		version = 0;
	if (!f.version)
		version = version_of_name(path); /* (checked against the object below) */
	if (!version) {
		snprintf(why, len, "%s: a CPython older than 3.11 (no Py_Version) whose file name "
			 "does not say which", path);
		return -ENOTSUP;
	}
	l = layout_of(version);
	if (l && f.code_type) {
		*lo = *l;
		if (layout_matches(pid, l, bias + f.code_type, f.str_type ? bias + f.str_type : 0,
				   f.frame_type ? bias + f.frame_type : 0, whyd, sizeof(whyd))) {
			snprintf(why, len, "%s: CPython %u.%u.%u, not laid out as pcmon's table for %u.%u "
				 "says (%s)", path, version >> 24, version >> 16 & 0xff,
				 version >> 8 & 0xff, version >> 24, version >> 16 & 0xff, whyd);
			return -EPROTO;
		}
	} else if (l) {
		*lo = *l;
	} else if (mem_read(pid, bias + f.runtime, dbg, sizeof(dbg)) ||
		   py_layout_published(dbg, sizeof(dbg), version, lo, whyd, sizeof(whyd))) {
		if (mem_read(pid, bias + f.runtime, dbg, 8))
			snprintf(whyd, sizeof(whyd), "_PyRuntime could not be read");
		snprintf(why, len, "%s: CPython %u.%u.%u, which pcmon has no offsets for (%s)", path,
			 version >> 24, version >> 16 & 0xff, version >> 8 & 0xff, whyd);
		return -ENOTSUP;
	}
	if (!f.code_type) {
		snprintf(why, len, "%s: CPython %u.%u.%u without PyCode_Type", path, version >> 24,
			 version >> 16 & 0xff, version >> 8 & 0xff);
		return -ENOTSUP;
	}
	*out = (struct pcmon_pyproc){ .version = version, .runtime = bias + f.runtime, .o = lo->o };
	*code_type = bias + f.code_type;
	return 0;
}

static bool pythonish(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "python", 6) || !strncmp(base, "libpython", 9);
}

struct find_ctx {
	uint32_t pid;
	struct pcmon_pyproc *out;
	struct py_layout *lo;
	uint64_t *code_type;
	char *why;
	size_t len;
	const char *last;	/* the object looked at last: each once */
	bool launcher;		/* a python* executable with no interpreter in it was seen */
	bool libpython;		/* ... and a libpython (then there is nothing to wait for) */
	int r;
};

static int find_cb(void *ctx, const char *path, uint64_t start, uint64_t end, uint64_t pgoff)
{
	struct find_ctx *c = ctx;

	/* an object's first mapping (offset 0), once */
	if (pgoff || path[0] != '/' || !pythonish(path) || (c->last && !strcmp(c->last, path)))
		return 0;
	c->last = path;
	c->r = find_in(c->pid, path, start, end, c->out, c->lo, c->code_type, c->why, c->len);
	if (!strncmp(strrchr(path, '/') + 1, "libpython", 9))
		c->libpython = true;
	else if (c->r == -ENOENT)
		c->launcher = true; /* its libpython may still be on its way */
	return c->r != -ENOENT;
}

/* In the address map the symbolizer read (no /proc read of its own: this runs for every
 * process sampled). */
static int find(struct sym *s, uint32_t pid, uint32_t epoch, struct pcmon_pyproc *out,
		struct py_layout *lo, uint64_t *code_type, char *why, size_t len)
{
	struct find_ctx c = { pid, out, lo, code_type, why, len, NULL, false, false, -ENOENT };

	elf_version(EV_CURRENT);
	sym_proc_files(s, pid, epoch, find_cb, &c);
	return c.r == -ENOENT && c.launcher && !c.libpython ? -EAGAIN : c.r;
}

int py_add(struct py *p, struct sym *s, uint32_t pid, uint32_t epoch, struct pcmon_pyproc *out,
	   char *why, size_t len)
{
	struct py_proc *e;
	struct py_layout lo;
	uint64_t code_type;
	int r = find(s, pid, epoch, out, &lo, &code_type, why, len);

	if (r)
		return r;
	if (!(e = proc_make(p, pid)))
		return -ENOMEM;
	e->found = true;
	e->l = lo;
	e->code_type = code_type;
	return 0;
}

/* ---- naming code objects */

static void put_utf8(char *out, size_t len, size_t *at, uint32_t c)
{
	char b[4];
	size_t n;

	if (c < 0x80) {
		b[0] = c;
		n = 1;
	} else if (c < 0x800) {
		b[0] = 0xc0 | c >> 6;
		b[1] = 0x80 | (c & 0x3f);
		n = 2;
	} else if (c < 0x10000) {
		b[0] = 0xe0 | c >> 12;
		b[1] = 0x80 | (c >> 6 & 0x3f);
		b[2] = 0x80 | (c & 0x3f);
		n = 3;
	} else {
		b[0] = 0xf0 | (c >> 18 & 0x07);
		b[1] = 0x80 | (c >> 12 & 0x3f);
		b[2] = 0x80 | (c >> 6 & 0x3f);
		b[3] = 0x80 | (c & 0x3f);
		n = 4;
	}
	if (*at + n < len) {
		memcpy(out + *at, b, n);
		*at += n;
	}
}

/* The str object at @addr as UTF-8 into @out: 0, or -errno. */
static int read_str(uint32_t pid, const struct py_layout *l, uint64_t addr, char *out, size_t len)
{
	uint8_t hdr[PY_STR_HDR_MAX], raw[PY_STR_MAX * 4];
	uint64_t n, data;
	uint32_t state, kind;
	size_t at = 0;
	int r = -EFAULT;

	/* (as much as the layout needs: a short str at the end of a page is still read) */
	if (!addr || (r = mem_read(pid, addr, hdr, MIN(sizeof(hdr), (size_t)l->str_compact + 8u))))
		return r;
	n = u64_at(hdr, l->str_length);
	memcpy(&state, hdr + l->str_state, sizeof(state));
	kind = state >> 2 & 7;
	if (n > PY_STR_MAX || (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL;
	if (state >> 5 & 1) /* compact: the characters follow the header */
		data = addr + (state >> 6 & 1 ? l->str_ascii : l->str_compact);
	else
		data = u64_at(hdr, l->str_ptr);
	if (n && (r = mem_read(pid, data, raw, n * kind)))
		return r;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t c = kind == 1 ? raw[i] : kind == 2 ? ((uint16_t *)raw)[i] : ((uint32_t *)raw)[i];

		put_utf8(out, len, &at, c);
	}
	out[at] = 0;
	return 0;
}

/* What tells one code object from another at the same address. */
static uint64_t header_sum(const struct py_layout *l, const uint8_t *h)
{
	uint64_t f[5] = { u64_at(h, l->ob_type), u64_at(h, l->co_filename),
			  u64_at(h, l->co_qualname), u64_at(h, l->co_linetable),
			  u64_at(h, l->co_firstlineno) & 0xffffffff };

	return hash_bytes(f, sizeof(f));
}

/* Read the code object of @e whose header is @h into @c. */
static int read_code(struct py *p, const struct py_proc *e, const uint8_t *h,
		     struct py_code *c)
{
	const struct py_layout *l = &e->l;
	char qualname[PY_STR_MAX * 3], file[PY_STR_MAX * 3], name[PY_STR_MAX * 6];
	uint64_t tab = u64_at(h, l->co_linetable), ntab = 0;
	int32_t first;
	uint8_t *t = NULL;
	int r;

	if (read_str(e->pid, l, u64_at(h, l->co_qualname), qualname, sizeof(qualname)) ||
	    read_str(e->pid, l, u64_at(h, l->co_filename), file, sizeof(file)))
		return -EFAULT;
	if (tab && !mem_read(e->pid, tab + l->ob_size, &ntab, sizeof(ntab)) && ntab &&
	    ntab <= PY_TAB_MAX) {
		t = malloc(ntab);
		if (!t)
			return -ENOMEM;
		if (mem_read(e->pid, tab + l->bytes_sval, t, ntab)) {
			free(t);
			t = NULL;
			ntab = 0;
		}
	} else {
		ntab = 0;
	}
	memcpy(&first, h + l->co_firstlineno, sizeof(first));
	py_proc_name(file, qualname, name, sizeof(name));
	free(c->tab);
	*c = (struct py_code){ .sum = header_sum(l, h), .gen = p->gen, .firstlineno = first,
			       .tab = t, .ntab = ntab, .lines = l->lines };
	r = sym_intern_str(p->sym, name, &c->name);
	if (!r)
		r = sym_intern_str(p->sym, file, &c->file);
	return r;
}

/*
 * The cached code object @addr of process @pid, checked once per drain: its header is read
 * again, and if the fields that say what it is changed (it was freed and another object took
 * its place) it is read whole again. A process gone keeps what was read while it ran.
 */
static struct py_code *code_of(struct py *p, uint32_t pid, uint64_t addr)
{
	struct py_proc *e = proc_of(p, pid);
	uint8_t h[PY_CODE_HDR_MAX];
	struct py_code *c;
	uint32_t slot;
	int r;

	if (!e || !e->found)
		return NULL;
	if (!e->keys && !(e->keys = itab_new()))
		return NULL;
	r = itab_intern(e->keys, &addr, sizeof(addr), &slot);
	if (r < 0 || GROW(e->codes, e->cap_codes, slot + 1))
		return NULL;
	c = &e->codes[slot];
	if (r == 1)
		*c = (struct py_code){ 0 }; /* (grown memory is not cleared) */
	if (c->gen == p->gen)
		return c;
	if (e->l.co_hdr > sizeof(h) || e->l.co_linetable + 8u > e->l.co_hdr ||
	    mem_read(pid, addr, h, e->l.co_hdr))
		return c->gen ? c : NULL; /* gone: what was read stands */
	if (u64_at(h, e->l.ob_type) != e->code_type)
		return NULL; /* not a code object (any more) */
	if (c->gen && c->sum == header_sum(&e->l, h)) {
		c->gen = p->gen;
		return c;
	}
	return read_code(p, e, h, c) ? NULL : c;
}

int py_code_early(struct py *p, uint32_t pid, uint64_t word)
{
	return code_of(p, pid, word & PCMON_PY_CODE_MASK) ? 0 : -EFAULT;
}

/* A location of its own per (name, file, line), shared by every process. */
int py_frame_loc(struct py *p, uint32_t pid, uint64_t word, uint32_t *loc)
{
	struct py_code *c = code_of(p, pid, word & PCMON_PY_CODE_MASK);
	uint32_t instr1 = word >> PCMON_PY_INSTR_SHIFT;
	const char *name, *file;
	char key[PY_STR_MAX * 9];
	uint32_t line;
	int l, kl;

	if (!c)
		return -EFAULT;
	if (instr1 == 0 || instr1 == PCMON_PY_INSTR_FAR || !c->tab)
		l = c->firstlineno;
	else
		l = py_line_in(c->lines, c->tab, c->ntab, c->firstlineno, (int)(instr1 - 1) * 2);
	line = l > 0 ? l : 0;
	name = sym_str(p->sym, c->name);
	file = sym_str(p->sym, c->file);
	kl = snprintf(key, sizeof(key), "%s:%s:%u", name, file, line);
	/* (strings of the symbolizer's table, which interning may move: copied first) */
	{
		char *n = strdup(name), *f = strdup(file);
		const char *procs[1] = { n }, *files[1] = { f };
		int r = n && f ? sym_intern_loc(p->sym, PY_MODULE, hash_bytes(key, MIN((size_t)kl, sizeof(key))), procs,
						files, &line, 1, loc)
			       : -ENOMEM;

		free(n);
		free(f);
		return r;
	}
}

/* ---- names */

void py_proc_name(const char *file, const char *qualname, char *out, size_t len)
{
	static const char *const roots[] = { "/site-packages/", "/dist-packages/" };
	const char *m = NULL, *p;
	char mod[1024];
	size_t n;

	if (file[0] == '<') {
		/* "<frozen importlib._bootstrap>", "<string>", "<stdin>" */
		m = !strncmp(file, "<frozen ", 8) ? file + 8 : file;
		snprintf(mod, sizeof(mod), "%s", m);
		n = strlen(mod);
		if (m != file && n && mod[n - 1] == '>')
			mod[n - 1] = 0;
	} else {
		for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
			p = strstr(file, roots[i]);
			if (p)
				m = p + strlen(roots[i]);
		}
		/* the standard library: .../lib/python3.11/json/decoder.py */
		if (!m && (p = strstr(file, "/python3.")) && (p = strchr(p + 1, '/')))
			m = p + 1;
		if (!m)
			m = (p = strrchr(file, '/')) ? p + 1 : file;
		snprintf(mod, sizeof(mod), "%s", m);
		n = strlen(mod);
		if (n > 3 && !strcmp(mod + n - 3, ".py"))
			mod[n -= 3] = 0;
		if (n > 9 && !strcmp(mod + n - 9, "/__init__"))
			mod[n -= 9] = 0;
		for (char *c = mod; *c; c++)
			if (*c == '/')
				*c = '.';
	}
	snprintf(out, len, "%s%s%s", mod, mod[0] ? "." : "", qualname);
}

/* ---- merging */

static bool is_eval(struct py *p, uint32_t loc)
{
	const struct sym_loc *l = sym_loc(p->sym, loc);
	const uint32_t *f;

	if (!l || !l->nframes)
		return false;
	f = sym_frames(p->sym, l);
	/* the outermost frame of the location: what was inlined into it comes first */
	return sym_proc(p->sym, f[l->nframes - 1])->name == p->eval_name;
}

bool py_runs_eval(struct py *p, const uint32_t *locs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (is_eval(p, locs[i]))
			return true;
	return false;
}

bool py_is_python(struct py *p, uint32_t pid)
{
	const struct py_proc *e = proc_of(p, pid);

	return e && e->found;
}

uint32_t py_merge(struct py *p, const struct py_merge_in *in, uint32_t *out, uint32_t *cut)
{
	uint32_t ngroups = 0, nevals = 0, np = 0, shift = 0, n = 0, g = 0, *gstart, *locs;
	uint32_t status = in->status;

	*cut = 0;
	locs = malloc((in->np + 1) * 2 * sizeof(*locs));
	if (!locs) {
		memcpy(out, in->nat, in->nn * sizeof(*out));
		return in->nn;
	}
	gstart = locs + in->np + 1;
	/* the Python frames, named; one that cannot be: the chain ends there */
	gstart[0] = 0;
	for (; np < in->np; np++) {
		if (py_frame_loc(p, in->pid, in->pw[np], &locs[np])) {
			status = PCMON_PY_FAULT;
			break;
		}
		if (in->pw[np] & PCMON_PY_ENTRY)
			gstart[++ngroups] = np + 1;
	}
	if (np > gstart[ngroups])
		gstart[++ngroups] = np; /* the last group did not reach its entry frame */
	for (uint32_t i = 0; i < in->nn; i++)
		nevals += is_eval(p, in->nat[i]);
	/*
	 * Activation i (innermost first) runs group i. A whole chain with fewer groups than
	 * activations lines up at the outer end (an activation just entered has not set up its
	 * frame yet); a chain cut short lines up at the inner end, where it was read from.
	 */
	if (status == PCMON_PY_OK && nevals > ngroups)
		shift = nevals - ngroups;
	for (uint32_t i = 0, e = 0; i < in->nn; i++) {
		if (!is_eval(p, in->nat[i])) {
			out[n++] = in->nat[i];
			continue;
		}
		if (e++ < shift) {
			out[n++] = in->nat[i];
			continue;
		}
		if (g < ngroups) {
			for (uint32_t j = gstart[g]; j < gstart[g + 1]; j++)
				out[n++] = locs[j];
			g++;
			continue;
		}
		if (status != PCMON_PY_OK)
			break; /* the frames this one ran were not read: cut here */
		out[n++] = in->nat[i];
	}
	/* groups left: the native walk stopped short of their activations (no frame pointers) */
	for (; g < ngroups; g++)
		for (uint32_t j = gstart[g]; j < gstart[g + 1]; j++)
			out[n++] = locs[j];
	*cut = status;
	free(locs);
	return n;
}
