// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/symbols/hotspot*.c (docs/java.md): HotSpot's compressed ints, line
 * number tables and debug-info scopes as the JVM encodes them, the names Java frames get, a
 * walk through a compiled, an interpreted and a compiled frame with an inlined method laid
 * out by hand in this process's memory (a code heap and its segment map, code blobs, Methods,
 * constant pools, symbols: read as a JVM's are), with a blob replaced and one freed since
 * the sample, and the layout read by name from the tables a real libjvm.so publishes (each JDK under
 * /usr/lib/jvm, loaded with dlopen in a child of its own, which runs its static
 * initializers: what a JVM's memory holds. Skipped when there is none.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#include "hotspot.h"
#include "hotspot_int.h"
#include "sym.h"

/* CompressedWriteStream::write_int as JDK 17 (@x1 false) and 21 on (UNSIGNED5) write it. */
static size_t put_int(uint8_t *b, uint32_t v, bool x1)
{
	const uint32_t x = x1, l = 192 - x;
	size_t n = 0;

	for (int i = 0; i < 4 && v >= l; i++) {
		b[n++] = (uint8_t)(x + l + ((v - l) % 64));
		v = (v - l) / 64;
	}
	b[n++] = (uint8_t)(v + x);
	return n;
}

static size_t put_signed(uint8_t *b, int32_t v, bool x1)
{
	return put_int(b, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31), x1);
}

static void compressed_ints(void **state)
{
	static const uint32_t vals[] = { 0, 1, 100, 190, 191, 192, 193, 255, 256, 1000, 12345,
					 70000, 1u << 20, 123456789, 0x7fffffff };
	(void)state;
	for (int x1 = 0; x1 < 2; x1++) {
		uint8_t buf[256];
		size_t len = 0;
		struct hs_stream s = { .buf = buf, .x1 = x1 };

		for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
			len += put_int(buf + len, vals[i], x1);
		len += put_signed(buf + len, -5, x1);
		len += put_signed(buf + len, 7, x1);
		s.len = len;
		for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
			assert_int_equal(hs_read_int(&s), vals[i]);
		assert_int_equal(hs_read_signed(&s), -5);
		assert_int_equal(hs_read_signed(&s), 7);
		assert_false(s.bad);
		assert_int_equal(s.pos, len);
		hs_read_int(&s);
		assert_true(s.bad); /* past the end */
	}
	/* a 0 byte is no int in UNSIGNED5 */
	{
		uint8_t z = 0;
		struct hs_stream s = { .buf = &z, .len = 1, .x1 = true };

		hs_read_int(&s);
		assert_true(s.bad);
	}
}

/* A line number table as javac's LineNumberTable becomes one (CompressedLineNumberWriteStream). */
static size_t put_pair(uint8_t *b, int *bci, int *line, int nbci, int nline, bool x1)
{
	int db = nbci - *bci, dl = nline - *line;
	size_t n = 0;

	*bci = nbci;
	*line = nline;
	if (db >= 0 && db < 32 && dl >= 0 && dl < 8) {
		b[0] = (uint8_t)(db << 3 | dl);
		return 1;
	}
	b[n++] = 0xff;
	n += put_signed(b + n, db, x1);
	n += put_signed(b + n, dl, x1);
	return n;
}

static void line_tables(void **state)
{
	(void)state;
	for (int x1 = 0; x1 < 2; x1++) {
		uint8_t tab[64];
		int bci = 0, line = 0;
		size_t n = 0, cut;

		n += put_pair(tab + n, &bci, &line, 0, 12, x1);	/* 0: line 12 */
		n += put_pair(tab + n, &bci, &line, 5, 13, x1);	/* 5: 13 */
		cut = n;
		n += put_pair(tab + n, &bci, &line, 40, 11, x1); /* 40: back to 11 (a loop) */
		n += put_pair(tab + n, &bci, &line, 300, 90, x1); /* far */
		tab[n++] = 0;
		assert_int_equal(hs_line_of(tab, n, x1, 0), 12);
		assert_int_equal(hs_line_of(tab, n, x1, 4), 12);
		assert_int_equal(hs_line_of(tab, n, x1, 5), 13);
		assert_int_equal(hs_line_of(tab, n, x1, 39), 13);
		assert_int_equal(hs_line_of(tab, n, x1, 40), 11);
		assert_int_equal(hs_line_of(tab, n, x1, 299), 11);
		assert_int_equal(hs_line_of(tab, n, x1, 1000), 90);
		/* cut off: what was read still answers */
		assert_int_equal(hs_line_of(tab, cut, x1, 7), 13);
		/* none */
		assert_int_equal(hs_line_of(tab + n - 1, 1, x1, 3), -1);
	}
}

static void scopes(void **state)
{
	uint8_t d[64];
	size_t n = 1; /* (offset 0 is "no scope") */
	uint32_t sender, mi, outer;
	int bci;

	(void)state;
	d[0] = 0;
	/* the outer scope: no sender, method 2, bci 17; the inner: sender the outer, method 1, bci 3 */
	outer = n;
	n += put_int(d + n, 0, false);
	n += put_int(d + n, 2, false);
	n += put_int(d + n, 17 + 1, false); /* (bci - InvocationEntryBci) */
	{
		uint32_t inner = n;

		n += put_int(d + n, outer, false);
		n += put_int(d + n, 1, false);
		n += put_int(d + n, 3 + 1, false);
		assert_true(hs_scope_at(d, n, false, inner, -1, &sender, &mi, &bci));
		assert_int_equal(sender, outer);
		assert_int_equal(mi, 1);
		assert_int_equal(bci, 3);
		assert_true(hs_scope_at(d, n, false, sender, -1, &sender, &mi, &bci));
		assert_int_equal(sender, 0);
		assert_int_equal(mi, 2);
		assert_int_equal(bci, 17);
		assert_false(hs_scope_at(d, n, false, n + 3, -1, &sender, &mi, &bci));
		assert_false(hs_scope_at(d, inner + 2, false, inner, -1, &sender, &mi, &bci));
	}
}

static void names(void **state)
{
	char out[64];

	(void)state;
	hs_proc_name("java/util/HashMap$Node", 22, "getKey", 6, out, sizeof(out));
	assert_string_equal(out, "java.util.HashMap$Node.getKey");
	hs_proc_name("Phases", 6, "alpha", 5, out, sizeof(out));
	assert_string_equal(out, "Phases.alpha");
	hs_proc_name("Phases", 6, "lambda$main$0", 13, out, 10);
	assert_string_equal(out, "Phases.la");
}

/* ---- a walk over a JVM made by hand in this process's memory (read as any JVM's) */

/* The layout this test's structures follow (what the tables would say). */
static void fake_layout(struct hs_layout *l)
{
	memset(l, 0xff, sizeof(*l)); /* HS_NONE everywhere */
	l->version = 17;
	l->ga_len = 0, l->ga_data = 8;
	l->heap_memory = 0, l->heap_segmap = 64, l->heap_log2seg = 128;
	l->vs_low_boundary = 0, l->vs_high_boundary = 8, l->vs_low = 16, l->vs_high = 24;
	l->hb_size = 16, l->hb_used = 8;
	l->cb_name = 8, l->cb_size = 16, l->cb_frame_complete = 20, l->cb_frame_size = 24;
	l->cb_code_begin = 32, l->cb_code_end = 40, l->cb_size_bytes = 128;
	l->cb_frame_complete_2 = false;
	l->nm_method = 48, l->nm_compile_id = 56, l->nm_scopes_data = 64, l->nm_metadata = 72;
	l->nm_scopes_pcs = 76, l->nm_deps = 80;
	l->nm_deopt_begin = 88, l->nm_orig_pc = 96;
	l->pc_pc_offset = 0, l->pc_scope_decode = 4, l->pc_size = 16;
	l->m_const = 8;
	l->cm_constants = 8, l->cm_flags = 16, l->cm_code_size = 18, l->cm_name_index = 20;
	l->cm_sig_index = 22, l->cm_size = 48, l->cm_flags_4 = false, l->cm_has_lines = 1;
	l->cp_holder = 8, l->cp_source_file = 16, l->cp_size = 48;
	l->k_name = 16;
	l->sym_length = 4, l->sym_body = 6;
	l->if_method = -3, l->if_bcp = -7, l->if_sender_sp = -1;
	l->invocation_entry_bci = -1;
	l->scopes = true;
	l->unsigned5_x1 = false;
	l->nm_immutable_layout = false;
}

#define SEG 64 /* bytes a segment (log2 6) */
#define NSEG 256
static _Alignas(4096) uint8_t heap[SEG * NSEG];
static uint8_t segmap[NSEG];
static uint8_t world[16384]; /* Methods, constant pools, symbols */
static size_t world_at;

static uint64_t put(const void *p, size_t len)
{
	uint64_t a;

	world_at = (world_at + 7) & ~7ul;
	assert_true(world_at + len <= sizeof(world));
	a = (uint64_t)(world + world_at);
	memcpy(world + world_at, p, len);
	world_at += len;
	return a;
}

static uint64_t put_symbol(const char *str)
{
	uint8_t b[128] = { 0 };
	uint16_t n = strlen(str);

	memcpy(b + 4, &n, 2);
	memcpy(b + 6, str, n);
	return put(b, 6 + n + 1);
}

static void put64(uint8_t *b, size_t at, uint64_t v) { memcpy(b + at, &v, 8); }
static void put32(uint8_t *b, size_t at, uint32_t v) { memcpy(b + at, &v, 4); }
static void put16(uint8_t *b, size_t at, uint16_t v) { memcpy(b + at, &v, 2); }

/*
 * A Method of class @klass named @name, in @file, with @code_size bytes of bytecode and a
 * line table of one line per 10 bytecodes from @first_line. Its ConstMethod's address in
 * *@cm (its bytecodes follow it).
 */
static uint64_t put_method(const char *klass, const char *name, const char *file,
			   uint16_t code_size, int first_line, uint64_t *cm)
{
	uint8_t kb[32] = { 0 }, cp[48 + 3 * 8] = { 0 }, cmb[48 + 256 + 64] = { 0 }, mb[16] = { 0 };
	uint64_t k, cpa;
	size_t n = 48 + code_size;
	int bci = 0, line = 0;

	put64(kb, 16, put_symbol(klass));
	k = put(kb, sizeof(kb));
	put64(cp, 8, k);
	put16(cp, 16, 2);			/* source file: slot 2 */
	put64(cp, 48 + 1 * 8, put_symbol(name)); /* name: slot 1 */
	put64(cp, 48 + 2 * 8, put_symbol(file));
	cpa = put(cp, sizeof(cp));
	put64(cmb, 8, cpa);
	put16(cmb, 16, 1); /* has a line number table */
	put16(cmb, 18, code_size);
	put16(cmb, 20, 1);
	for (int b = 0; b < code_size; b += 10)
		n += put_pair(cmb + n, &bci, &line, b, first_line + b / 10, false);
	cmb[n++] = 0;
	*cm = put(cmb, n);
	put64(mb, 8, *cm);
	return put(mb, sizeof(mb));
}

/* A blob at segment @seg of @nseg segments; its header's fields as given. */
static uint8_t *put_blob(uint32_t seg, uint32_t nseg, uint64_t name, int32_t frame_size,
			 int32_t frame_complete)
{
	uint8_t *blk = heap + seg * SEG, *cb = blk + 16;

	for (uint32_t i = 0; i < nseg; i++)
		segmap[seg + i] = i < 255 ? i : 254;
	blk[8] = 1; /* used */
	put64(cb, 8, name);
	put32(cb, 16, nseg * SEG - 16);
	put32(cb, 20, frame_complete);
	put32(cb, 24, frame_size);
	put64(cb, 32, (uint64_t)(cb + 128));		/* code after the 128-byte header */
	put64(cb, 40, (uint64_t)(blk + nseg * SEG - 512)); /* debug info in the last 512 */
	return cb;
}

static const char nm_name[] = "nmethod", interp_name[] = "Interpreter";
static uint64_t cc_bounds[2];

static void walk_synthetic(void **state)
{
	struct hs_layout l;
	struct sym *s = sym_new(0);
	struct hs *h = hs_new(s);
	struct hs_proc *p;
	uint64_t cm_a, cm_b, cm_c, cm_main, m_a, m_b, m_c, m_main;
	uint8_t *a, *in, *b, *d;
	uint64_t stack[64] = { 0 }, base = (uint64_t)stack;
	__u64 regs[PCMON_NREGS] = { 0 };
	__u64 pcs[16];
	int end;
	enum hs_end hend;
	int n;

	(void)state;
	assert_non_null(h);
	fake_layout(&l);
	memset(segmap, 0xff, sizeof(segmap));
	world_at = 0;
	m_a = put_method("pkg/A", "a", "A.java", 40, 10, &cm_a);
	m_b = put_method("pkg/B", "b", "B.java", 60, 20, &cm_b);
	m_c = put_method("pkg/C", "inl", "C.java", 30, 30, &cm_c);
	m_main = put_method("pkg/Main", "main", "Main.java", 50, 40, &cm_main);
	(void)cm_c;
	(void)cm_main;

	/* A: compiled, a frame of 4 words, complete at 16; pc 100 bytes into its code */
	a = put_blob(0, 16, (uint64_t)nm_name, 4, 16);
	put64(a, 48, m_a);
	put32(a, 56, 7); /* compile id */
	/* (no debug info: named after its method) */
	put64(a, 64, (uint64_t)(heap + 16 * SEG - 512));
	put32(a, 72, 16 * SEG - 16 - 512), put32(a, 76, 16 * SEG - 16 - 512), put32(a, 80, 16 * SEG - 16 - 512);
	/* the interpreter, 300 segments' worth would not fit: 8 */
	in = put_blob(16, 8, (uint64_t)interp_name, 0, 0);
	/* B: compiled, 6 words, with debug info: at code offset 40 (a call's return), scope
	 * inl@bci 12 inlined into main@bci 25 */
	b = put_blob(24, 32, (uint64_t)nm_name, 6, 8);
	put64(b, 48, m_main); /* (compiled for main: its outermost scope) */
	put32(b, 56, 9);
	{
		uint8_t *dbg = heap + 56 * SEG - 512; /* metadata, scopes, PcDescs */
		uint64_t meta[2] = { m_c, m_main };
		uint8_t sc[32];
		size_t n1 = 1, outer, inner;
		uint32_t meta_off = (uint32_t)(dbg - (b));

		memcpy(dbg, meta, sizeof(meta));
		sc[0] = 0;
		outer = n1;
		n1 += put_int(sc + n1, 0, false);
		n1 += put_int(sc + n1, 2, false);	/* main */
		n1 += put_int(sc + n1, 25 + 1, false);
		inner = n1;
		n1 += put_int(sc + n1, outer, false);
		n1 += put_int(sc + n1, 1, false);	/* inl */
		n1 += put_int(sc + n1, 12 + 1, false);
		memcpy(dbg + 16, sc, n1);
		put64(b, 64, (uint64_t)(dbg + 16));	/* scopes data */
		put32(b, 72, meta_off);			/* metadata */
		put32(b, 76, meta_off + 16 + 64);	/* PcDescs */
		put32(b, 80, meta_off + 16 + 64 + 2 * 16);
		put32(dbg + 16 + 64, 0, -1);		/* the sentinel PcDesc */
		put32(dbg + 16 + 64 + 16, 0, 40);
		put32(dbg + 16 + 64 + 16, 4, inner);
	}

	p = calloc(1, sizeof(*p));
	assert_non_null(p);
	assert_int_equal(pidtab_put(h->procs, getpid(), p), 0);
	p->pid = getpid();
	p->jvm = true;
	/* (the code cache's bounds, where the process is read to tell it is still there) */
	l.cc_low = (uint64_t)&cc_bounds[0];
	l.cc_high = (uint64_t)&cc_bounds[1];
	p->l = l;
	p->cc_lo = (uint64_t)heap;
	p->cc_hi = (uint64_t)heap + sizeof(heap);
	p->heaps[0] = (struct hs_heap){ (uint64_t)heap, (uint64_t)heap + sizeof(heap), (uint64_t)segmap, 6 };
	p->nheaps = 1;
	p->heaps_read = now_coarse_ns() + 60000000000ull; /* (not read again) */

	/*
	 * The stack, from the top: A's frame (4 words: 2 of its own, its caller's rbp, the
	 * return address into the interpreter); the interpreted frame that runs pkg.B.b at bci 31
	 * (line 23), its frame pointer at stack[12]; its caller B (compiled), returned to at its
	 * code offset 40, where inl is inlined into main.
	 */
	regs[16] = (uint64_t)(a + 128 + 100);	/* pc */
	regs[7] = base;				/* rsp */
	regs[6] = 0x1234;			/* rbp: A's own use of it */
	stack[2] = base + 12 * 8;		/* A's saved rbp: the interpreter's frame */
	stack[3] = (uint64_t)(in + 128 + 50);	/* return into the interpreter */
	stack[12] = 0;				/* the interpreted frame's caller's rbp */
	stack[13] = (uint64_t)(b + 128 + 40);	/* its return address: B, at offset 40 */
	stack[12 - 1] = base + 14 * 8;		/* sender sp: B's frame starts right above */
	stack[12 - 3] = m_b;			/* Method */
	stack[12 - 7] = cm_b + 48 + 31;		/* bcp: bci 31 */
	/* B's frame: 6 words from stack[14]; its return address 0 ends the walk */
	{
		struct hs_blob bb;

		assert_int_equal(hs_blob_of(p, (uint64_t)(in + 128 + 50), &bb), 0);
		assert_int_equal(bb.kind, HS_BLOB_INTERP);
		assert_int_equal(hs_blob_of(p, regs[16], &bb), 0);
		assert_int_equal(bb.kind, HS_BLOB_NMETHOD);
		assert_int_equal(bb.frame_size, 4);
	}
	n = hs_walk(h, getpid(), 1, regs, 0, (const uint8_t *)stack, sizeof(stack), 0, pcs, 16, &end,
		    &hend);
	assert_true(n >= 3);
	for (int i = 0; i < 3; i++)
		assert_true(pcs[i] & HS_LOC_TAG);
	{
		const struct sym_loc *la = sym_loc(s, (uint32_t)pcs[0]), *lb = sym_loc(s, (uint32_t)pcs[1]),
				     *lc = sym_loc(s, (uint32_t)pcs[2]);
		const struct sym_line *ln;

		assert_int_equal(la->nframes, 1);
		assert_string_equal(sym_str(s, sym_proc(s, sym_frames(s, la)[0])->full), "java.pkg.A.a");
		assert_int_equal(lb->nframes, 1);
		assert_string_equal(sym_str(s, sym_proc(s, sym_frames(s, lb)[0])->full), "java.pkg.B.b");
		ln = sym_frame_lines(s, lb);
		assert_string_equal(sym_str(s, ln[0].file), "pkg/B.java");
		assert_int_equal(ln[0].line, 23); /* bci 31: the pair at 30 */
		/* B's frame: inl inlined into main, innermost first */
		assert_int_equal(lc->nframes, 2);
		assert_string_equal(sym_str(s, sym_proc(s, sym_frames(s, lc)[0])->full), "java.pkg.C.inl");
		assert_string_equal(sym_str(s, sym_proc(s, sym_frames(s, lc)[1])->full), "java.pkg.Main.main");
		ln = sym_frame_lines(s, lc);
		assert_int_equal(ln[0].line, 31);
		assert_int_equal(ln[1].line, 42);
	}
	/* B being deoptimized: its callee returns to B's handler, B's pc kept in its frame */
	put64(b, 88, (uint64_t)(b + 128 + 300));
	put32(b, 96, 16);
	stack[13] = (uint64_t)(b + 128 + 300);
	stack[14 + 2] = (uint64_t)(b + 128 + 40);
	put32(b, 56, 13);
	n = hs_walk(h, getpid(), 1, regs, 0, (const uint8_t *)stack, sizeof(stack), 0, pcs, 16, &end,
		    &hend);
	assert_true(n >= 3 && (pcs[2] & HS_LOC_TAG));
	assert_int_equal(sym_loc(s, (uint32_t)pcs[2])->nframes, 2);
	assert_string_equal(sym_str(s, sym_proc(s, sym_frames(s, sym_loc(s, (uint32_t)pcs[2]))[0])->full),
			    "java.pkg.C.inl");
	stack[13] = (uint64_t)(b + 128 + 40);
	stack[14 + 2] = 0;
	put32(b, 56, 9);
	/* scopes that do not end with the nmethod's own method are not trusted: its name alone */
	put64(b, 48, m_c);
	put32(b, 56, 11);
	n = hs_walk(h, getpid(), 1, regs, 0, (const uint8_t *)stack, sizeof(stack), 0, pcs, 16, &end,
		    &hend);
	assert_true(n >= 3 && (pcs[2] & HS_LOC_TAG));
	{
		const struct sym_loc *lc = sym_loc(s, (uint32_t)pcs[2]);

		assert_int_equal(lc->nframes, 1);
		assert_string_equal(sym_str(s, sym_proc(s, sym_frames(s, lc)[0])->full), "java.pkg.C.inl");
		assert_int_equal(sym_frame_lines(s, lc)[0].line, 0);
	}
	put64(b, 48, m_main);
	put32(b, 56, 9);
	/* scopes written as UNSIGNED5 in a JVM taken to use the older encoding: read all the same */
	{
		uint8_t *dbg = heap + 56 * SEG - 512, sc[32];
		size_t n1 = 1, outer, inner;

		sc[0] = 0;
		outer = n1;
		n1 += put_int(sc + n1, 0, true);
		n1 += put_int(sc + n1, 2, true);
		n1 += put_int(sc + n1, 25 + 1, true);
		inner = n1;
		n1 += put_int(sc + n1, outer, true);
		n1 += put_int(sc + n1, 1, true);
		n1 += put_int(sc + n1, 12 + 1, true);
		memcpy(dbg + 16, sc, n1);
		put32(dbg + 16 + 64 + 16, 4, inner);
		put32(b, 56, 12);
		n = hs_walk(h, getpid(), 1, regs, 0, (const uint8_t *)stack, sizeof(stack), 0, pcs, 16,
			    &end, &hend);
		assert_true(n >= 3 && (pcs[2] & HS_LOC_TAG));
		assert_int_equal(sym_loc(s, (uint32_t)pcs[2])->nframes, 2);
		assert_true(p->l.unsigned5_x1);
	}
	/*
	 * B freed and another compilation at its address since the sample (another compile id),
	 * with no PcDesc at the return address: not the code that made the call, refused
	 */
	put32(heap + 56 * SEG - 512 + 16 + 64 + 16, 0, 44);
	put32(b, 56, 10);
	n = hs_walk(h, getpid(), 1, regs, 0, (const uint8_t *)stack, sizeof(stack), 0, pcs, 16, &end,
		    &hend);
	assert_int_equal(hend, HS_END_JAVA);
	assert_int_equal(n, 3); /* A, B's callee, and B's pc unnamed where it stopped */
	assert_false(pcs[2] & HS_LOC_TAG);
	put32(heap + 56 * SEG - 512 + 16 + 64 + 16, 0, 40);
	put32(b, 56, 9);
	/* the code at the sampled pc: as it was then, named; other than it was, refused */
	put32(a + 128 + 100, 0, 0x12345678);
	n = hs_walk(h, getpid(), 1, regs, 0, (const uint8_t *)stack, sizeof(stack), 0x12345678, pcs,
		    16, &end, &hend);
	assert_true(n >= 3 && (pcs[0] & HS_LOC_TAG));
	n = hs_walk(h, getpid(), 1, regs, 0, (const uint8_t *)stack, sizeof(stack), 0x9abcdef0, pcs,
		    16, &end, &hend);
	assert_int_equal(hend, HS_END_JAVA);
	assert_int_equal(n, 1);
	assert_false(pcs[0] & HS_LOC_TAG);
	/* A freed since the sample: the walk stops at once, flagged */
	d = heap;
	d[8] = 0;
	n = hs_walk(h, getpid(), 1, regs, 0, (const uint8_t *)stack, sizeof(stack), 0, pcs, 16, &end,
		    &hend);
	assert_int_equal(hend, HS_END_JAVA);
	assert_int_equal(n, 1);
	d[8] = 1;
	hs_free(h);
	sym_free(s);
}

/* ---- a real libjvm.so's published tables */

static int self_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (!addr)
		return -14;
	memcpy(buf, (const void *)addr, len);
	return 0;
}

/* In a child: load @path and read its tables; exit 0 if all is as expected. */
static int check_jvm(const char *path)
{
	struct hs_rd rd = { self_read, NULL };
	struct hs_tables t = { 0 };
	struct hs_layout l;
	char why[200];
	uint64_t v;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	int r;

	if (!h) {
		fprintf(stderr, "%s: %s\n", path, dlerror());
		return 2;
	}
	for (int i = 0; i < HS_NTABLES; i++) {
		t.table[i] = (uint64_t)dlsym(h, hs_table_syms[i]);
		for (int k = 0; k < 8; k++)
			if (hs_shape_syms[i][k])
				t.shape[i][k] = (uint64_t)dlsym(h, hs_shape_syms[i][k]);
	}
	r = hs_layout_read(&rd, &t, &l, why, sizeof(why));
	if (r) {
		fprintf(stderr, "%s: %s\n", path, why);
		return 1;
	}
	fprintf(stderr, "%s: JDK %u, scopes %d, CodeBlob::_frame_size at %u, nmethod::_method at %u, "
		"HeapBlock %u bytes, ConstMethod %u bytes\n", path, l.version, l.scopes,
		l.cb_frame_size, l.nm_method, l.hb_size, l.cm_size);
#define CHECK(c)                                                  \
	do {                                                      \
		if (!(c)) {                                       \
			fprintf(stderr, "%s: not so: %s\n", path, #c); \
			return 1;                                 \
		}                                                 \
	} while (0)
	CHECK(l.version && l.cb_frame_size != HS_NONE && l.cm_has_lines != HS_NONE);
	CHECK(!hs_lookup(&rd, &t, "CodeBlob", "_frame_size", &v) && v == l.cb_frame_size);
	CHECK(!hs_lookup(&rd, &t, "Method", NULL, &v) && v); /* a type's size */
	CHECK(hs_lookup(&rd, &t, "NoSuchType", "_x", &v));
	/* what the JDKs pcmon decodes compiled frames of must say so */
	CHECK(l.version < 11 || l.scopes);
	CHECK(l.version < 23 || l.nm_immutable_layout); /* (the debug info out of the nmethod) */
	CHECK(l.version != 17 || (l.hb_size == 16 && l.if_sender_sp == -1 && !l.unsigned5_x1));
	return 0;
}

static void published_tables(void **state)
{
	glob_t g;
	int checked = 0, failed = 0;
	char seen[4096] = "";

	(void)state;
	if (glob("/usr/lib/jvm/*/lib/server/libjvm.so", 0, NULL, &g)) {
		skip();
		return;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char real[4096];
		int st;
		pid_t pid;

		/* (java-17-openjdk-amd64 and java-1.17.0-openjdk-amd64 are the same JDK) */
		if (!realpath(g.gl_pathv[i], real) || !strcmp(real, seen))
			continue;
		snprintf(seen, sizeof(seen), "%s", real);
		pid = fork();
		if (pid == 0)
			_exit(check_jvm(real));
		assert_true(pid > 0);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		if (WEXITSTATUS(st) == 2)
			continue; /* (could not be loaded here) */
		failed += WEXITSTATUS(st) != 0;
		checked++;
	}
	globfree(&g);
	assert_int_equal(failed, 0);
	if (!checked)
		skip();
}

/*
 * A machine's churn of processes, each looked at for a JVM (none is: these pids run no
 * process here, or not a JVM) and gone: what is kept of them is let go HS_FORGET_NS after
 * each exit; an exec (another image) starts afresh.
 */
static void churn_leaves_nothing(void **state)
{
	enum { N = 100000, STEP_NS = 1000000, BASE = 1 << 23 }; /* an exit a ms, 100 s */
	struct sym *s = sym_new(0);
	struct hs *h = s ? hs_new(s) : NULL;
	uint32_t most = 0;

	(void)state;
	assert_non_null(h);
	for (uint32_t i = 1; i <= N; i++) {
		uint32_t pid = BASE + i; /* (above the largest pid_max, 2^22: no such process) */

		assert_false(hs_is_jvm(h, pid, 0));
		assert_false(hs_is_jvm(h, pid, 1)); /* an exec */
		assert_false(hs_new_jvm(h, pid));
		assert_false(hs_starting(h, pid));
		hs_exited(h, pid, (uint64_t)i * STEP_NS);
		if (hs_procs_kept(h) > most)
			most = hs_procs_kept(h);
	}
	/* kept: those that exited within HS_FORGET_NS of the last exit, and a few */
	assert_true(most <= HS_FORGET_NS / STEP_NS + 2);
	assert_true(most >= HS_FORGET_NS / STEP_NS);
	hs_free(h);
	sym_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(churn_leaves_nothing),
		cmocka_unit_test(compressed_ints),
		cmocka_unit_test(line_tables),
		cmocka_unit_test(scopes),
		cmocka_unit_test(names),
		cmocka_unit_test(walk_synthetic),
		cmocka_unit_test(published_tables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
