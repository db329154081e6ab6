// SPDX-License-Identifier: GPL-2.0-only
/*
 * Walking a JVM's copied stack (docs/java.md): Java frames are stepped here, by what the
 * code blob around their pc says (compiled frames by their blob's frame size, interpreted
 * ones by their frame pointer), native frames by the CFI walk (unwind.c's cursor).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hotspot_int.h"
#include "sym.h"
#include "unwind.h"

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA	16

/* The code cache's heaps read again, at most every 50 ms: 0 if they were. */
static int heaps_again(struct hs_proc *p)
{
	if (now_coarse_ns() < p->heaps_read + 50000000ull)
		return -EAGAIN;
	return hs_heaps_read(p);
}

static bool in_code_cache(struct hs_proc *p, uint64_t pc)
{
	if (!p->nheaps)
		heaps_again(p);
	return p->nheaps && pc >= p->cc_lo && pc < p->cc_hi;
}

static struct hs_heap *heap_of(struct hs_proc *p, uint64_t pc)
{
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < p->nheaps; i++)
			if (pc >= p->heaps[i].lo && pc < p->heaps[i].hi)
				return &p->heaps[i];
		/* a heap grows as it commits memory: read the bounds again, once */
		if (pass == 0 && heaps_again(p))
			break;
	}
	return NULL;
}

/* The start of the block holding @pc, through the heap's segment map: 0 if free or none. */
static uint64_t block_of(struct hs_proc *p, struct hs_heap *hp, uint64_t pc)
{
	uint64_t seg = (pc - hp->lo) >> hp->log2seg;
	uint8_t map[1024];
	uint64_t first = 0;
	bool have = false;

	/*
	 * Each byte says how many segments back to step toward the block's first (0 there);
	 * 0xff: an unused segment. The map is read 1 KiB at a time, ending at the segment.
	 */
	for (int hops = 0; hops < 100000; hops++) {
		uint8_t v;

		if (!have || seg < first) {
			first = seg >= sizeof(map) - 1 ? seg - (sizeof(map) - 1) : 0;
			if (hs_mem(p->pid, hp->segmap + first, map, seg - first + 1))
				return 0;
			have = true;
		}
		v = map[seg - first];
		if (v == 0xff)
			return 0;
		if (v == 0)
			return hp->lo + (seg << hp->log2seg);
		if (v > seg)
			return 0;
		seg -= v;
	}
	return 0;
}

static enum hs_kind kind_of(struct hs_proc *p, struct hs_blob *b)
{
	if (b->name_ptr && b->name_ptr == p->nm_name)
		return HS_BLOB_NMETHOD;
	if (b->name_ptr && b->name_ptr == p->native_name) {
		b->native = true;
		return HS_BLOB_NMETHOD;
	}
	if (b->name_ptr && b->name_ptr == p->interp_name)
		return HS_BLOB_INTERP;
	memset(b->name, 0, sizeof(b->name));
	if (!b->name_ptr || hs_mem(p->pid, b->name_ptr, b->name, 16))
		return b->frame_size > 0 ? HS_BLOB_FRAMED : HS_BLOB_STUB;
	if (!memchr(b->name, 0, 16))
		hs_mem(p->pid, b->name_ptr + 16, b->name + 16, sizeof(b->name) - 17);
	if (!strcmp(b->name, "nmethod")) {
		p->nm_name = b->name_ptr;
		return HS_BLOB_NMETHOD;
	}
	if (!strcmp(b->name, "native nmethod")) {
		p->native_name = b->name_ptr;
		b->native = true;
		return HS_BLOB_NMETHOD;
	}
	if (!strcmp(b->name, "Interpreter")) {
		p->interp_name = b->name_ptr;
		return HS_BLOB_INTERP;
	}
	return b->frame_size > 0 ? HS_BLOB_FRAMED : HS_BLOB_STUB;
}

static struct hs_blob *slot_of(struct hs_proc *p, uint64_t pc)
{
	if (!p->seen && !(p->seen = calloc(HS_SEEN_MAX, sizeof(*p->seen))))
		return NULL;
	return &p->seen[(pc >> 4) % HS_SEEN_MAX];
}

/* A blob read before, when the process's memory is gone (it exited): 0 or -ENOENT. */
static int recall(struct hs_proc *p, uint64_t pc, struct hs_blob *b)
{
	struct hs_blob *s = slot_of(p, pc);
	uint64_t v;

	if (!s || !hs_mem(p->pid, p->l.cc_low, &v, 8))
		return -ENOENT; /* it is there: what was read then is not what is there now */
	/* its own slot, else any other that covers it */
	for (uint32_t i = 0; i <= HS_SEEN_MAX; i++) {
		if (s->addr && pc >= s->code_begin && pc < s->code_end) {
			*b = *s;
			return 0;
		}
		if (i < HS_SEEN_MAX)
			s = &p->seen[i];
	}
	return -ENOENT;
}

/* The blob at block @blk, if it holds @pc: 0, or -ENOENT (a free block, or another blob). */
static int blob_at(struct hs_proc *p, uint64_t blk, uint64_t pc, struct hs_blob *b)
{
	const struct hs_layout *l = &p->l;
	uint8_t buf[1024], *hdr;
	uint32_t need;

	need = l->cb_size_bytes != HS_NONE ? l->cb_size_bytes : 128;
	need = MIN(need, (uint32_t)sizeof(buf) - l->hb_size);
	/* the block's header and the blob's, in one read */
	if (l->hb_size > 64 || hs_mem(p->pid, blk, buf, l->hb_size + need))
		return -EFAULT;
	if (l->hb_used != HS_NONE && l->hb_used < l->hb_size && !buf[l->hb_used])
		return -ENOENT; /* a free block: the code that was there is gone */
	hdr = buf + l->hb_size;
	memset(b, 0, sizeof(*b));
	b->addr = blk + l->hb_size;
	b->pc = pc;
	b->name_ptr = hs_u64(hdr, l->cb_name);
	b->frame_size = (int32_t)hs_u32(hdr, l->cb_frame_size);
	b->frame_complete = l->cb_frame_complete_2 ? (int16_t)hs_u16(hdr, l->cb_frame_complete)
						   : (int32_t)hs_u32(hdr, l->cb_frame_complete);
	if (l->cb_code_begin != HS_NONE) {
		b->code_begin = hs_u64(hdr, l->cb_code_begin);
		b->code_end = l->cb_code_end != HS_NONE ? hs_u64(hdr, l->cb_code_end) : 0;
	} else {
		b->code_begin = b->addr + hs_u32(hdr, l->cb_code_offset);
		b->code_end =
			l->cb_data_offset != HS_NONE ? b->addr + hs_u32(hdr, l->cb_data_offset) : 0;
	}
	if (!b->code_end)
		b->code_end = b->addr + hs_u32(hdr, l->cb_size);
	b->kind = kind_of(p, b);
	if (b->kind == HS_BLOB_INTERP) {
		/* the interpreter's buffer: its code is the whole queue */
		b->code_begin = b->addr;
		b->code_end = b->addr + hs_u32(hdr, l->cb_size);
	}
	if (pc < b->code_begin || pc >= b->code_end)
		return -ENOENT;
	if (b->kind == HS_BLOB_NMETHOD) {
		b->method = hs_u64(hdr, l->nm_method);
		b->compile_id =
			l->nm_compile_id != HS_NONE ? (int32_t)hs_u32(hdr, l->nm_compile_id) : 0;
		b->orig_pc = l->nm_orig_pc != HS_NONE ? (int32_t)hs_u32(hdr, l->nm_orig_pc)
						      : (int32_t)HS_NONE;
		if (l->nm_deopt_begin != HS_NONE)
			b->deopt = hs_u64(hdr, l->nm_deopt_begin);
		else if (l->nm_deopt_offset != HS_NONE)
			b->deopt = b->addr + hs_u32(hdr, l->nm_deopt_offset);
	}
	return 0;
}

static int blob_read(struct hs_proc *p, uint64_t pc, struct hs_blob *b);

int hs_blob_of(struct hs_proc *p, uint64_t pc, struct hs_blob *b)
{
	struct hs_blob *s = slot_of(p, pc);
	int r;

	/*
	 * The blob read for a pc that falls in the same slot, if it covers this one: its header
	 * read again, and taken if it is still that blob (used, same name, same code, same
	 * compilation); else found through the segment map.
	 */
	if (s && s->addr && pc >= s->code_begin && pc < s->code_end &&
	    !blob_at(p, s->addr - p->l.hb_size, pc, b) && b->name_ptr == s->name_ptr &&
	    b->code_begin == s->code_begin && b->compile_id == s->compile_id)
		return 0;
	r = blob_read(p, pc, b);
	if (!r && s)
		*s = *b;
	else if (r && !recall(p, pc, b))
		r = 0;
	return r;
}

static int blob_read(struct hs_proc *p, uint64_t pc, struct hs_blob *b)
{
	struct hs_heap *hp = heap_of(p, pc);
	uint64_t blk;

	blk = hp ? block_of(p, hp, pc) : 0;
	if (hp && !blk && !heaps_again(p)) {
		/*
		 * The heaps as read early in the JVM's life may not be the ones it made in the end
		 * (a segment map not set up yet): read again, at most every 50 ms.
		 */
		hp = heap_of(p, pc);
		blk = hp ? block_of(p, hp, pc) : 0;
	}
	if (!blk) {
		if (log_verbosity >= LOG_DEBUG)
			pr_debug("pid %u: pc %#llx: %s of the code cache (%#llx-%#llx, %u heaps)",
				 p->pid, (unsigned long long)pc, hp ? "in no block" : "in no heap",
				 (unsigned long long)p->cc_lo, (unsigned long long)p->cc_hi,
				 p->nheaps);
		return -ENOENT;
	}
	return blob_at(p, blk, pc, b);
}

/* Could @ra be a return address: in the code cache, or in code the CFI walk knows? */
static bool plausible(struct hs_proc *p, struct unw_cursor *c, uint64_t ra)
{
	const struct cfi_rule *rule;

	if (ra < 4096)
		return false;
	if (ra >= p->cc_lo && ra < p->cc_hi) {
		struct hs_blob b;

		return hs_blob_of(p, ra, &b) == 0;
	}
	return sym_cfi_rule(c->s, c->pid, c->epoch, ra - 1, &rule) == 0;
}

struct jwalk {
	struct hs *h;
	struct hs_proc *p;
	struct unw_cursor c;
	uint64_t usp; /* the unextended stack pointer: where a compiled frame starts */
	uint32_t code; /* the code at the sampled pc then (0: not known) */
};

/*
 * A frame whose code is not set up yet (before frame_complete) or torn down (the epilogue
 * after `pop %rbp`): its return address is at the stack pointer, or one word above it
 * (after `push %rbp`).
 */
static int step_unframed(struct jwalk *w, uint64_t sp)
{
	uint64_t ra, bp;

	if (unw_read(&w->c, sp, &ra) && plausible(w->p, &w->c, ra)) {
		unw_set_caller(&w->c, ra, sp + 8, w->c.r[REG_RBP], w->c.valid & (1u << REG_RBP));
		w->usp = sp + 8;
		return 0;
	}
	if (unw_read(&w->c, sp + 8, &ra) && unw_read(&w->c, sp, &bp) &&
	    plausible(w->p, &w->c, ra)) {
		unw_set_caller(&w->c, ra, sp + 16, bp, true);
		w->usp = sp + 16;
		return 0;
	}
	return -EINVAL;
}

/* A frame of @b's own size (compiled code, runtime stubs): the caller's sp is usp + size. */
static int step_sized(struct jwalk *w, const struct hs_blob *b, uint64_t pc, bool top)
{
	uint64_t sp = w->c.r[REG_RSP], ssp, ra, bp;

	if (top && (pc - b->code_begin < (uint64_t)MAX(b->frame_complete, 0)))
		return step_unframed(w, sp);
	ssp = w->usp + (uint64_t)b->frame_size * 8;
	if (b->frame_size <= 0 || !unw_read(&w->c, ssp - 8, &ra) || !unw_read(&w->c, ssp - 16, &bp))
		return top ? step_unframed(w, sp) : -EINVAL;
	if (top && !plausible(w->p, &w->c, ra))
		return step_unframed(w, sp);
	unw_set_caller(&w->c, ra, ssp, bp, true);
	w->usp = ssp;
	return 0;
}

/*
 * A frame on the frame pointer (the interpreter's, the call stub's). An interpreted frame
 * (@interp) keeps its caller's stack pointer as it was before the callee's arguments were
 * pushed (its sender sp): where a compiled caller's frame starts.
 */
static int step_fp(struct jwalk *w, bool interp)
{
	uint64_t bp = w->c.r[REG_RBP], ra, nbp, ssp = 0;

	if (!(w->c.valid & (1u << REG_RBP)) || !unw_read(&w->c, bp + 8, &ra) ||
	    !unw_read(&w->c, bp, &nbp) || bp + 16 <= w->c.r[REG_RSP])
		return -EINVAL;
	if (!interp || !unw_read(&w->c, bp + w->p->l.if_sender_sp * 8, &ssp) || ssp < bp + 16 ||
	    ssp > bp + 16 + (1u << 20))
		ssp = bp + 16;
	unw_set_caller(&w->c, ra, bp + 16, nbp, true);
	w->usp = ssp;
	return 0;
}

/* One Java frame at the cursor's pc, its location added to @pcs: 0, or -errno (stop). */
static int java_step(struct jwalk *w, __u64 *pcs, uint32_t *n)
{
	struct hs_stats *st = &w->h->st;
	uint64_t pc = w->c.r[REG_RA];
	bool top = w->c.after_signal;
	struct hs_blob b;
	uint32_t loc = 0;
	int r;

	r = hs_blob_of(w->p, pc, &b);
	if (r) {
		st->stale++;
		return r;
	}
	/*
	 * The frame on top: the code at its pc must be what ran there (a blob freed and another
	 * compiled into its space since, at the same pc, is not what was sampled). Not told
	 * once the process is gone: what was read while it ran stands.
	 */
	if (top && w->code && b.kind != HS_BLOB_INTERP) {
		uint32_t now;

		if (!hs_mem(w->p->pid, pc, &now, sizeof(now)) && now != w->code) {
			st->stale++;
			return -ESTALE;
		}
	}
	switch (b.kind) {
	case HS_BLOB_NMETHOD: {
		uint64_t at = pc;

		/*
		 * A frame being deoptimized returns to its nmethod's deoptimization handler: the pc
		 * it had, the call it made, is kept in the frame (HotSpot's orig_pc_addr()).
		 */
		if (!top && b.deopt && pc == b.deopt && b.orig_pc != (int32_t)HS_NONE &&
		    (!unw_read(&w->c, w->usp + b.orig_pc, &at) || at < b.code_begin ||
		     at >= b.code_end))
			at = pc;
		r = hs_compiled_loc(w->h, w->p, &b, at, !top, &loc);
		if (r) {
			st->stale++;
			return r;
		}
		st->compiled++;
		pcs[(*n)++] = HS_LOC_TAG | loc;
		return step_sized(w, &b, pc, top);
	}
	case HS_BLOB_INTERP: {
		uint64_t bp = w->c.r[REG_RBP], method, bcp;

		if (!(w->c.valid & (1u << REG_RBP)) ||
		    !unw_read(&w->c, bp + w->p->l.if_method * 8, &method) ||
		    !unw_read(&w->c, bp + w->p->l.if_bcp * 8, &bcp))
			return -EINVAL;
		r = hs_interp_loc(w->h, w->p, method, bcp, &loc);
		if (r) {
			if (log_verbosity >= LOG_DEBUG)
				pr_debug(
					"pid %u: interpreted frame at %#llx, bp %#llx: Method %#llx "
					"unreadable%s",
					w->p->pid, (unsigned long long)pc, (unsigned long long)bp,
					(unsigned long long)method, top ? " (on top)" : "");
			return r;
		}
		st->interpreted++;
		pcs[(*n)++] = HS_LOC_TAG | loc;
		return step_fp(w, true);
	}
	case HS_BLOB_FRAMED:
		if (!hs_stub_loc(w->h, w->p, &b, &loc))
			pcs[(*n)++] = HS_LOC_TAG | loc;
		st->stubs++;
		return step_sized(w, &b, pc, top);
	default:
		if (!hs_stub_loc(w->h, w->p, &b, &loc))
			pcs[(*n)++] = HS_LOC_TAG | loc;
		st->stubs++;
		/* a leaf stub has pushed nothing: its caller's return address is on top */
		if (top && !step_unframed(w, w->c.r[REG_RSP]))
			return 0;
		return step_fp(w, false);
	}
}

int hs_walk(struct hs *h, uint32_t pid, uint32_t epoch, const __u64 regs[PCMON_NREGS],
	    uint64_t start_sp, const uint8_t *stack, uint32_t len, uint32_t code, __u64 *pcs,
	    uint32_t max, int *end, enum hs_end *hend)
{
	struct jwalk w = { .h = h, .p = hs_proc_of(h, pid), .code = code };
	enum unw_end e = UNW_END_ROOT;
	uint32_t n = 0;

	*hend = HS_END_NATIVE;
	hs_names_trim(h->names);
	unw_init(&w.c, h->sym, pid, epoch, regs, start_sp, stack, len);
	w.usp = regs[REG_RSP];
	for (;;) {
		uint64_t pc = w.c.r[REG_RA];

		if (n + 1 >= max) {
			*end = UNW_END_DEPTH;
			return n;
		}
		if (w.p && in_code_cache(w.p, pc)) {
			uint32_t before = n;

			int r = java_step(&w, pcs, &n);

			if (r) {
				h->st.unwalked++;
				if (log_verbosity >= LOG_DEBUG)
					pr_debug(
						"pid %u: Java frame at pc %#llx (frame %u, sp %#llx, bp %#llx): %s",
						pid, (unsigned long long)pc, n,
						(unsigned long long)w.c.r[REG_RSP],
						(unsigned long long)w.c.r[REG_RBP], strerror(-r));
				if (n == before)
					pcs[n++] =
						pc; /* (the frame, unnamed, where the walk stopped) */
				*hend = HS_END_JAVA;
				*end = UNW_END_FAULT;
				return n;
			}
			h->st.frames += n - before;
			continue;
		}
		pcs[n++] = pc;
		if (!unw_step(&w.c, n, &e)) {
			*end = e;
			return n;
		}
		w.usp = w.c.r[REG_RSP];
	}
}
