// SPDX-License-Identifier: GPL-2.0-only
/*
 * Naming Java frames (docs/java.md): a Method's class, name, source file and line table read
 * from the JVM's memory; a compiled frame's methods (the one it runs and those inlined into
 * it at its pc) from its nmethod's debug info (PcDesc, scopes). Each physical frame is one
 * location of the module "java", its inlined methods the location's inline frames.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotspot_int.h"
#include "sym.h"

#define HS_NAME_MAX   512
#define HS_LINES_MAX  4096
#define HS_DEBUG_MAX  (1u << 20)	/* an nmethod's debug info read, at most */
#define HS_NMS_BYTES  (16u << 20)	/* what the cache of them holds, at most */
#define HS_INLINE_MAX 32

struct meth {
	char *name;    /* "java.util.HashMap.get" */
	char *file;    /* "java/util/HashMap.java" */
	uint64_t code; /* its bytecodes' address */
	uint32_t code_size;
	uint8_t *lines; /* its compressed line number table (NULL: none) */
	uint32_t nlines;
};

struct nm {
	uint32_t pid;
	uint64_t addr, method;
	int32_t compile_id;
	uint64_t code_begin;
	uint8_t *debug; /* metadata, scopes data, PcDescs, one after another */
	uint64_t size; /* its bytes */
	uint32_t meta_len, scopes_off, scopes_len, pcs_off, npcs;
};

struct hs_names {
	struct itab *meths; /* (pid, Method*) */
	struct meth *m;
	size_t cap_m;
	struct itab *locs; /* (pid, kind, address, id, pc): a frame's location */
	uint32_t *loc;
	size_t cap_loc;
	struct nm *nms; /* a small cache of nmethods' debug info, by address */
	size_t nnms, cap_nms, nms_bytes;
};

struct hs_names *hs_names_new(void)
{
	struct hs_names *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->meths = itab_new();
	n->locs = itab_new();
	if (!n->meths || !n->locs) {
		hs_names_free(n);
		return NULL;
	}
	return n;
}

static void meth_clear(struct meth *m)
{
	free(m->name);
	free(m->file);
	free(m->lines);
	memset(m, 0, sizeof(*m));
}

void hs_names_free(struct hs_names *n)
{
	if (!n)
		return;
	if (n->meths)
		for (uint32_t i = 0; i < itab_count(n->meths); i++)
			meth_clear(&n->m[i]);
	for (size_t i = 0; i < n->nnms; i++)
		free(n->nms[i].debug);
	itab_free(n->meths);
	itab_free(n->locs);
	free(n->m);
	free(n->loc);
	free(n->nms);
	free(n);
}

void hs_names_forget(struct hs_names *n, uint32_t pid)
{
	/* (the interned keys stay, each with its pid: a new process of the same pid is another
	 * JVM, so its methods are emptied, to be read again) */
	for (uint32_t i = 0; i < itab_count(n->meths); i++) {
		size_t len;
		const uint32_t *k = itab_key(n->meths, i, &len);

		if (k && k[0] == pid)
			meth_clear(&n->m[i]);
	}
	for (uint32_t i = 0; i < itab_count(n->locs); i++) {
		size_t len;
		const uint32_t *k = itab_key(n->locs, i, &len);

		if (k && k[0] == pid)
			n->loc[i] = 0;
	}
	for (size_t i = 0; i < n->nnms;) {
		if (n->nms[i].pid == pid) {
			n->nms_bytes -= n->nms[i].size;
			free(n->nms[i].debug);
			n->nms[i] = n->nms[--n->nnms];
		} else {
			i++;
		}
	}
}

/*
 * The caches are bounded: past HS_LOCS_MAX frames or HS_METHS_MAX methods (a long run of
 * JVMs that make code without end) they start again empty, what they held read anew as
 * needed. Called between walks, when no pointer into them is held.
 */
#define HS_LOCS_MAX  (1u << 20)
#define HS_METHS_MAX (1u << 18)
void hs_names_trim(struct hs_names *n)
{
	if (itab_count(n->locs) > HS_LOCS_MAX) {
		struct itab *t = itab_new();

		if (t) {
			itab_free(n->locs);
			n->locs = t;
		}
	}
	if (itab_count(n->meths) > HS_METHS_MAX) {
		struct itab *t = itab_new();

		if (t) {
			for (uint32_t i = 0; i < itab_count(n->meths); i++)
				meth_clear(&n->m[i]);
			itab_free(n->meths);
			n->meths = t;
		}
	}
}

/* A Symbol's text (cut to @len - 1 bytes): its length, or -errno. */
static int read_symbol(struct hs_proc *p, uint64_t sym, char *out, size_t len)
{
	uint16_t n;

	if (!sym || hs_mem(p->pid, sym + p->l.sym_length, &n, 2))
		return -EFAULT;
	if (!n)
		return -EINVAL;
	if (n >= len)
		n = len - 1;
	if (hs_mem(p->pid, sym + p->l.sym_body, out, n))
		return -EFAULT;
	out[n] = 0;
	return n;
}

/* Read Method @method of @p into @m: 0, or -errno. */
static int meth_read(struct hs_proc *p, uint64_t method, struct meth *m)
{
	const struct hs_layout *l = &p->l;
	uint8_t cm[256], cp[256];
	char klass[HS_NAME_MAX], name[HS_NAME_MAX], file[HS_NAME_MAX], full[HS_NAME_MAX * 2];
	uint64_t cmp, cpp, holder, ksym, nsym, fsym = 0;
	uint32_t flags;
	int kl, nl;

	if (!method || (method & 7) || l->cm_size > sizeof(cm) || l->cp_size > sizeof(cp))
		return -EINVAL;
	if (hs_mem(p->pid, method + l->m_const, &cmp, 8) || !cmp || (cmp & 7) ||
	    hs_mem(p->pid, cmp, cm, l->cm_size))
		return -EFAULT;
	cpp = hs_u64(cm, l->cm_constants);
	if (!cpp || (cpp & 7) || hs_mem(p->pid, cpp, cp, l->cp_size))
		return -EFAULT;
	holder = hs_u64(cp, l->cp_holder);
	if (!holder || hs_mem(p->pid, holder + l->k_name, &ksym, 8) ||
	    hs_mem(p->pid, cpp + l->cp_size + 8ull * hs_u16(cm, l->cm_name_index), &nsym, 8))
		return -EFAULT;
	kl = read_symbol(p, ksym, klass, sizeof(klass));
	nl = read_symbol(p, nsym & ~1ull, name, sizeof(name));
	if (kl <= 0 || nl <= 0)
		return -EFAULT;
	hs_proc_name(klass, kl, name, nl, full, sizeof(full));
	file[0] = 0;
	if (l->cp_source_file != HS_NONE && l->cp_source_file + 2 <= l->cp_size) {
		uint16_t fi = hs_u16(cp, l->cp_source_file);

		if (fi && !hs_mem(p->pid, cpp + l->cp_size + 8ull * fi, &fsym, 8) &&
		    read_symbol(p, fsym & ~1ull, file, sizeof(file)) > 0) {
			/* the package's directory before it: java/util/HashMap.java */
			char *slash = strrchr(klass, '/');

			size_t dl = slash ? (size_t)(slash - klass) + 1 : 0, fl = strlen(file);

			if (dl && dl + fl < sizeof(file)) {
				memmove(file + dl, file, fl + 1);
				memcpy(file, klass, dl);
			}
		}
	}
	memset(m, 0, sizeof(*m));
	m->name = strdup(full);
	m->file = strdup(file);
	if (!m->name || !m->file) {
		meth_clear(m);
		return -ENOMEM;
	}
	m->code = cmp + l->cm_size;
	m->code_size = hs_u16(cm, l->cm_code_size);
	flags = l->cm_flags == HS_NONE ? 0
		: l->cm_flags_4	       ? hs_u32(cm, l->cm_flags)
				       : hs_u16(cm, l->cm_flags);
	if (l->cm_has_lines != HS_NONE && (flags & l->cm_has_lines)) {
		uint8_t buf[HS_LINES_MAX];
		uint32_t got = 0;

		/* (it ends with a 0: read in pieces, a table near the end of a page still reads) */
		for (uint32_t at = 0; at < sizeof(buf); at += 256) {
			if (hs_mem(p->pid, m->code + m->code_size + at, buf + at, 256))
				break;
			got = at + 256;
			if (memchr(buf + at, 0, 256))
				break;
		}
		if (got && (m->lines = malloc(got))) {
			memcpy(m->lines, buf, got);
			m->nlines = got;
		}
	}
	return 0;
}

static struct meth *meth_of(struct hs *h, struct hs_proc *p, uint64_t method)
{
	struct hs_names *n = h->names;
	struct {
		uint32_t pid, pad;
		uint64_t m;
	} key = { p->pid, 0, method };
	struct meth m;
	uint32_t id;
	int r;

	r = itab_intern(n->meths, &key, sizeof(key), &id);
	if (r < 0 || GROW(n->m, n->cap_m, id + 1))
		return NULL;
	if (r == 1)
		memset(&n->m[id], 0, sizeof(n->m[id]));
	if (n->m[id].name)
		return &n->m[id];
	if (meth_read(p, method, &m))
		return NULL;
	n->m[id] = m;
	/*
	 * The method a procedure with its source file and first line (its bytecode 0's), as
	 * the exports' functions say, before any location names it (which gives neither).
	 */
	if (m.file[0]) {
		int first = m.lines ? hs_line_of(m.lines, m.nlines, p->l.unsigned5_x1, 0) : 0;
		uint32_t proc;

		if (sym_intern_proc(h->sym, HS_MODULE, m.name, m.file, first > 0 ? first : 0,
				    &proc) >= 0)
			sym_set_proc_file(h->sym, proc, m.file, first > 0 ? first : 0);
	}
	return &n->m[id];
}

bool hs_method_ok(struct hs_proc *p, uint64_t method)
{
	struct meth m;

	if (meth_read(p, method, &m))
		return false;
	meth_clear(&m);
	return true;
}

static int line_of(const struct hs_proc *p, const struct meth *m, int bci)
{
	int line;

	if (!m->lines)
		return 0;
	line = hs_line_of(m->lines, m->nlines, p->l.unsigned5_x1, bci);
	return line > 0 ? line : 0;
}

/* The location of @n frames, innermost first. */
static int intern(struct hs *h, const char *const *procs, const char *const *files,
		  const uint32_t *lines, size_t n, uint32_t *loc)
{
	char key[4096];
	size_t at = 0;

	for (size_t i = 0; i < n && at < sizeof(key); i++)
		at += snprintf(key + at, sizeof(key) - at, "%s:%s:%u|", procs[i],
			       files[i] ? files[i] : "", lines[i]);
	at = MIN(at, sizeof(key));
	return sym_intern_loc(h->sym, HS_MODULE, hash_bytes(key, at) & ~HS_LOC_TAG, procs, files,
			      lines, n, loc);
}

/* The cached location of a frame by (pid, kind, a, b, c); 0 if none. */
static uint32_t *loc_slot(struct hs *h, uint32_t pid, uint32_t kind, uint64_t a, uint64_t b,
			  uint64_t c)
{
	struct hs_names *n = h->names;
	struct {
		uint32_t pid, kind;
		uint64_t a, b, c;
	} key = { pid, kind, a, b, c };
	uint32_t id;
	int r = itab_intern(n->locs, &key, sizeof(key), &id);

	if (r < 0 || GROW(n->loc, n->cap_loc, id + 1))
		return NULL;
	if (r == 1)
		n->loc[id] = 0;
	return &n->loc[id];
}

int hs_interp_loc(struct hs *h, struct hs_proc *p, uint64_t method, uint64_t bcp, uint32_t *loc)
{
	struct meth *m = meth_of(h, p, method);
	uint32_t *slot, line;
	const char *procs[1], *files[1];
	int bci;

	if (!m)
		return -EFAULT;
	bci = bcp >= m->code && bcp < m->code + m->code_size ? (int)(bcp - m->code) : 0;
	slot = loc_slot(h, p->pid, 1, method, bci, 0);
	if (slot && *slot) {
		*loc = *slot;
		return 0;
	}
	line = line_of(p, m, bci);
	procs[0] = m->name;
	files[0] = m->file[0] ? m->file : NULL;
	if (intern(h, procs, files, &line, 1, loc))
		return -ENOMEM;
	if (slot)
		*slot = *loc;
	return 0;
}

/* The debug info of nmethod @b, read now (or as read before, if it is still the same). */
static struct nm *nm_of(struct hs *h, struct hs_proc *p, const struct hs_blob *b)
{
	struct hs_names *n = h->names;
	const struct hs_layout *l = &p->l;
	uint8_t hdr[1024];
	struct span {
		uint64_t at, len;
	} part[3]; /* metadata, scopes data, PcDescs */
	uint64_t total = 0;
	struct nm e = { .pid = p->pid,
			.addr = b->addr,
			.method = b->method,
			.compile_id = b->compile_id,
			.code_begin = b->code_begin };
	size_t i;

	for (i = 0; i < n->nnms; i++) {
		struct nm *c = &n->nms[i];

		if (c->pid == p->pid && c->addr == b->addr) {
			if (c->method == b->method && c->compile_id == b->compile_id &&
			    c->code_begin == b->code_begin)
				return c;
			n->nms_bytes -= c->size;
			free(c->debug);
			n->nms[i] = n->nms[--n->nnms];
			break;
		}
	}
	if (l->cb_size_bytes > sizeof(hdr) || hs_mem(p->pid, b->addr, hdr, l->cb_size_bytes))
		return NULL;
	if (!l->nm_immutable_layout) {
		/* up to JDK 22: metadata, scopes data, PcDescs in the nmethod, one after another */
		uint64_t sdata = hs_u64(hdr, l->nm_scopes_data);
		int32_t meta = (int32_t)hs_u32(hdr, l->nm_metadata);
		int32_t pcs = (int32_t)hs_u32(hdr, l->nm_scopes_pcs);
		int32_t deps = (int32_t)hs_u32(hdr, l->nm_deps);

		if (meta <= 0 || sdata < b->addr + meta || sdata > b->addr + pcs || pcs > deps)
			return NULL;
		part[0] = (struct span){ b->addr + meta, sdata - (b->addr + meta) };
		part[1] = (struct span){ sdata, b->addr + pcs - sdata };
		part[2] = (struct span){ b->addr + pcs, (uint64_t)(deps - pcs) };
	} else {
		/*
		 * From JDK 23: PcDescs then scopes data in the immutable data block, the metadata
		 * after the relocations in the mutable data block (both out of the code cache)
		 */
		uint64_t imm = hs_u64(hdr, l->nm_immutable), mut = hs_u64(hdr, l->cb_mutable);
		uint32_t imm_size = hs_u32(hdr, l->nm_immutable_size);
		uint32_t spo = hs_u32(hdr, l->nm_scopes_pcs), sdo = hs_u32(hdr, l->nm_scopes_data);
		uint32_t mut_size = hs_u32(hdr, l->cb_mutable_size);
		uint32_t reloc = hs_u32(hdr, l->cb_relocation_size);

		if (!imm || !mut || spo > sdo || sdo > imm_size || reloc > mut_size)
			return NULL;
		part[0] = (struct span){ mut + reloc, mut_size - reloc };
		part[1] = (struct span){ imm + sdo, imm_size - sdo };
		part[2] = (struct span){ imm + spo, sdo - spo };
	}
	for (i = 0; i < 3; i++)
		total += part[i].len;
	if (total > HS_DEBUG_MAX || part[0].len % 8)
		return NULL;
	e.meta_len = part[0].len;
	e.scopes_off = part[0].len;
	e.scopes_len = part[1].len;
	e.pcs_off = part[0].len + part[1].len;
	e.npcs = part[2].len / l->pc_size;
	e.debug = malloc(total + 1);
	if (!e.debug)
		return NULL;
	for (i = 0, total = 0; i < 3; total += part[i].len, i++) {
		if (part[i].len && hs_mem(p->pid, part[i].at, e.debug + total, part[i].len)) {
			free(e.debug);
			return NULL;
		}
	}
	/* (room made at random: the first entry, another each time, as the last moves there) */
	while (n->nnms && (n->nnms >= 256 || n->nms_bytes + total > HS_NMS_BYTES)) {
		n->nms_bytes -= n->nms[0].size;
		free(n->nms[0].debug);
		n->nms[0] = n->nms[--n->nnms];
	}
	if (GROW(n->nms, n->cap_nms, n->nnms + 1)) {
		free(e.debug);
		return NULL;
	}
	e.size = total;
	n->nms_bytes += total;
	n->nms[n->nnms] = e;
	return &n->nms[n->nnms++];
}

/*
 * The methods of scope chain @dec of nmethod @e, innermost first, into @procs, @files and
 * @lines, read with encoding @x1: how many, or 0 if the chain is not trusted. It must end
 * with @method, the one the nmethod was compiled for, and each bytecode index must lie in
 * its method: one that does not, or stops short, was not read right (another encoding than
 * its JDK's, a scope past what was read).
 */
static uint32_t scope_chain(struct hs *h, struct hs_proc *p, const struct nm *e, uint32_t dec,
			    uint64_t method, bool x1, const char **procs, const char **files,
			    uint32_t *lines)
{
	const uint8_t *sd = e->debug + e->scopes_off;
	uint64_t outer = 0;
	uint32_t nf = 0;

	while (dec && nf < HS_INLINE_MAX) {
		uint32_t sender, mi;
		uint64_t mp;
		struct meth *m;
		int bci;

		if (!hs_scope_at(sd, e->scopes_len, x1, dec, p->l.invocation_entry_bci, &sender,
				 &mi, &bci) ||
		    !mi || mi * 8 > e->meta_len)
			return 0;
		mp = hs_u64(e->debug, (mi - 1) * 8);
		m = meth_of(h, p, mp);
		if (!m || bci < -1 || bci > (int)m->code_size)
			return 0;
		outer = mp;
		procs[nf] = m->name;
		files[nf] = m->file[0] ? m->file : NULL;
		lines[nf] =
			m->lines ? (uint32_t)MAX(hs_line_of(m->lines, m->nlines, x1, bci), 0) : 0;
		nf++;
		dec = sender;
	}
	return dec || outer != method ? 0 : nf;
}

int hs_compiled_loc(struct hs *h, struct hs_proc *p, const struct hs_blob *b, uint64_t pc,
		    bool exact, uint32_t *loc)
{
	const struct hs_layout *l = &p->l;
	const char *procs[HS_INLINE_MAX], *files[HS_INLINE_MAX];
	uint32_t lines[HS_INLINE_MAX], nf = 0, *slot;
	int64_t rel = (int64_t)(pc - b->code_begin);
	struct nm *e;
	int best = -1;

	slot = loc_slot(h, p->pid, 2, b->addr, ((uint64_t)(uint32_t)b->compile_id << 32) | exact,
			pc);
	if (slot && *slot) {
		*loc = *slot;
		return 0;
	}
	/* (a Method read before, while the process ran, is good for its last records) */
	if (!meth_of(h, p, b->method))
		return -ESTALE;
	e = l->scopes ? nm_of(h, p, b) : NULL;
	if (e) {
		/* the PcDesc at a return address; for the frame on top, the next one after pc */
		for (uint32_t i = 0; i < e->npcs; i++) {
			int32_t off = (int32_t)hs_u32(e->debug, e->pcs_off + i * l->pc_size +
									l->pc_pc_offset);

			if (exact ? off == rel : off > rel) {
				best = i;
				break;
			}
		}
	}
	/*
	 * A caller's frame returns to a call: its nmethod has a PcDesc exactly there. One that
	 * has none is not the code that made the call (freed and replaced since the sample).
	 */
	if (e && exact && best < 0 && !b->native)
		return -ESTALE;
	if (best >= 0) {
		uint32_t dec =
			hs_u32(e->debug, e->pcs_off + best * l->pc_size + l->pc_scope_decode);

		nf = scope_chain(h, p, e, dec, b->method, l->unsigned5_x1, procs, files, lines);
		if (!nf &&
		    scope_chain(h, p, e, dec, b->method, !l->unsigned5_x1, procs, files, lines)) {
			/*
			 * Read right with the other encoding of HotSpot's streams (the JDK that moved
			 * to UNSIGNED5 not the one pcmon took it to be): this JVM's, from now on.
			 */
			p->l.unsigned5_x1 = !p->l.unsigned5_x1;
			pr_info("pid %u: JDK %u's debug info is %s-encoded", p->pid, l->version,
				l->unsigned5_x1 ? "UNSIGNED5" : "CompressedStream");
			nf = scope_chain(h, p, e, dec, b->method, l->unsigned5_x1, procs, files,
					 lines);
		}
		if (nf > 1)
			h->st.inlined += nf - 1;
	}
	if (!nf) {
		/* no debug info at that pc: the method the nmethod runs, without a line */
		struct meth *m = meth_of(h, p, b->method);

		if (!m)
			return -ESTALE;
		procs[0] = m->name;
		files[0] = m->file[0] ? m->file : NULL;
		lines[0] = 0;
		nf = 1;
	}
	if (intern(h, procs, files, lines, nf, loc))
		return -ENOMEM;
	if (slot)
		*slot = *loc;
	return 0;
}

int hs_stub_loc(struct hs *h, struct hs_proc *p, const struct hs_blob *b, uint32_t *loc)
{
	char name[64];
	const char *procs[1] = { name };
	uint32_t line = 0, *slot = loc_slot(h, p->pid, 3, b->addr, 0, 0);

	if (slot && *slot) {
		*loc = *slot;
		return 0;
	}
	snprintf(name, sizeof(name), "[%s]", b->name[0] ? b->name : "stub");
	if (intern(h, procs, (const char *const[]){ NULL }, &line, 1, loc))
		return -ENOMEM;
	if (slot)
		*slot = *loc;
	return 0;
}
