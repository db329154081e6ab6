// SPDX-License-Identifier: GPL-2.0-only
/*
 * The allocation instrument's kernel side (docs/alloc.md): uprobes at the entry and return
 * of the allocator's functions (glibc's malloc, calloc, realloc, memalign, aligned_alloc,
 * posix_memalign, valloc, pvalloc, and free; other allocators by naming theirs), attached
 * once per object file with the function in the cookie. A process of a target that watches
 * allocations counts down the bytes it allocates; an allocation that crosses its countdown
 * is sampled (include/pcmon_alloc.h), its user stack taken at the return (the caller's frame
 * is whole there, as it is not at the entry of a function that has not set up its own), and
 * sent to the engine with its address, which is kept live until freed.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "pcmon_alloc.h"
#include "procs.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 max_depth = 127;	/* frames per stack, <= PCMON_STACK_MAX */

/* The settings by target, and the countdown table (the engine's, before the first probe). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PCMON_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct pcmon_acfg);
} acfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PCMON_ALLOC_QUANTILES);
	__type(key, __u32);
	__type(value, __u32);
} aquant SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pcmon_athread);
} athreads SEC(".maps");

/* Sampled blocks not freed yet; the engine drops a process's at its exit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144);
	__type(key, struct pcmon_akey);
	__type(value, struct pcmon_ablock);
} alive SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 * 1024 * 1024);
} arecs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PCMON_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct pcmon_astat);
} astats SEC(".maps");

/* A sampled allocation's record as it is built: sent cut after its stack's frames (a few
 * hundred bytes, not the 4 KiB of a whole one: the ring holds thousands) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pcmon_arec);
} arec_scratch SEC(".maps");

__u64 next_id;	/* the records' ids */

static __always_inline struct pcmon_astat *astat(__u32 target)
{
	return bpf_map_lookup_elem(&astats, &target);
}

/* Bytes to the next sample at mean @rate: an exponential draw (aquant, x 2^16). */
static __always_inline __s64 draw(__u64 rate)
{
	__u32 i = bpf_get_prandom_u32() & (PCMON_ALLOC_QUANTILES - 1), *q;

	q = bpf_map_lookup_elem(&aquant, &i);
	return q ? (__s64)((rate * *q) >> 16) + 1 : (__s64)rate;
}

/*
 * The watched process's target, and its settings: NULL if it does not watch allocations.
 * A paused target still sees what ends a block (a free, a realloc's return): blocks sampled
 * before the pause may be freed during it (acfg.paused: no new samples).
 */
static __always_inline const struct pcmon_acfg *watching(__u32 *target)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	/* (a --cgroup target's process joins it here if nothing of its target saw it yet:
	 * only its processes are probed) */
	struct pcmon_proc *p = proc_of(tgid);
	const struct pcmon_acfg *c;
	struct pcmon_tcfg *tc;

	if (!p || (p->flags & PCMON_PF_EXEC_WAIT))
		return NULL;
	c = bpf_map_lookup_elem(&acfg, &p->target);
	if (!c || !c->rate)
		return NULL;
	tc = bpf_map_lookup_elem(&tcfg, &p->target);
	if (!tc || !may_watch(task, tc, p->target))
		return NULL;
	*target = p->target;
	return c;
}

/* (a block sampled before, by (process, address)) */
static __always_inline bool is_alive(__u32 pid, __u64 addr)
{
	struct pcmon_akey k = { .addr = addr, .pid = pid };

	return addr && bpf_map_lookup_elem(&alive, &k);
}

/*
 * An allocating function's entry: its size counted down, and whether its return must be
 * seen (a sampled allocation, or a realloc of a sampled block, which it ends). A session's
 * entry says so to the kernel, which then skips the return probe of every other call.
 */
static __always_inline bool enter(struct pt_regs *ctx, bool session)
{
	/* (the arguments read first, each from the context as it is: the verifier refuses a
	 * read through a context pointer the compiler moved) */
	__u64 a1 = PT_REGS_PARM1(ctx), a2 = PT_REGS_PARM2(ctx), a3 = PT_REGS_PARM3(ctx);
	__u32 fn = (__u32)bpf_get_attach_cookie(ctx) & 0xff, target;
	const struct pcmon_acfg *c = watching(&target);
	struct pcmon_athread *th;
	struct pcmon_astat *st;
	__u64 size;

	if (!c || fn >= PCMON_AFN_FREE)
		return false;
	switch (fn) {
	case PCMON_AFN_CALLOC:
		size = a1 * a2;
		break;
	case PCMON_AFN_REALLOC:
	case PCMON_AFN_MEMALIGN:
		size = a2;
		break;
	case PCMON_AFN_POSIX_MEMALIGN:
		size = a3;
		break;
	default:
		size = a1;
	}
	th = bpf_task_storage_get(&athreads, bpf_get_current_task_btf(), NULL,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!th)
		return 0;
	if (!th->rate_gen) { /* its first: a countdown of its own */
		th->left = draw(c->rate);
		th->rate_gen = 1;
	}
	th->fn = fn;
	th->size = size;
	th->old = fn == PCMON_AFN_REALLOC || fn == PCMON_AFN_POSIX_MEMALIGN ? a1 : 0;
	if (c->paused) { /* (a realloc still ends its sampled block at its return) */
		th->sampled = 0;
		return th->old && fn == PCMON_AFN_REALLOC;
	}
	th->left -= (__s64)size;
	th->sampled = th->left <= 0;
	if (th->sampled) /* (one sample however many periods it crossed: its weight says) */
		th->left = draw(c->rate);
	st = astat(target);
	if (st) {
		st->entries++;
		st->sampled += th->sampled;
	}
	if (th->sampled || !session)
		return true;
	if (fn != PCMON_AFN_REALLOC || !th->old)
		return false;
	if (is_alive(bpf_get_current_pid_tgid() >> 32, th->old))
		return true;
	/* its return will not look: the block it ends was not sampled (counted here, whether
	 * or not the realloc then succeeds; docs/alloc.md) */
	if (st)
		st->frees_unmatched++;
	return false;
}

SEC("uprobe")
int alloc_enter(struct pt_regs *ctx)
{
	enter(ctx, false);
	return 0;
}

/* Block @addr of process @pid is freed (or moved by realloc): if it was sampled, say so. */
static __always_inline void block_freed(__u32 target, __u32 pid, __u64 addr)
{
	struct pcmon_akey k = { .addr = addr, .pid = pid };
	struct pcmon_ablock *b;
	struct pcmon_arec *r;
	struct pcmon_astat *st;

	if (!addr)
		return;
	b = bpf_map_lookup_elem(&alive, &k);
	if (!b) {
		st = astat(target);
		if (st)
			st->frees_unmatched++;
		return;
	}
	r = bpf_ringbuf_reserve(&arecs, offsetof(struct pcmon_arec, ip), 0);
	if (r) {
		r->kind = PCMON_AREC_FREE;
		r->target = target;
		r->pid = pid;
		r->tid = (__u32)bpf_get_current_pid_tgid();
		r->nip = 0;
		r->id = b->id;
		r->ts = bpf_ktime_get_ns();
		r->addr = addr;
		r->size = b->size;
		bpf_ringbuf_submit(r, 0);
	} else if ((st = astat(target))) {
		st->ring_full++;
	}
	bpf_map_delete_elem(&alive, &k);
}

SEC("uprobe")
int alloc_free(struct pt_regs *ctx)
{
	__u32 target;

	if (!watching(&target))
		return 0;
	block_freed(target, bpf_get_current_pid_tgid() >> 32, PT_REGS_PARM1(ctx));
	return 0;
}

/* An allocating function's return: a sampled allocation's record, a realloc's old block
 * ended. */
static __always_inline int leave(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), addr = PT_REGS_RC(ctx);
	struct pcmon_akey k = { .pid = pid_tgid >> 32 };
	struct pcmon_ablock b = {};
	struct pcmon_athread *th;
	struct pcmon_proc *p;
	struct pcmon_astat *st;
	struct pcmon_arec *r;
	__u32 target;
	long n;

	if (!watching(&target))
		return 0;
	th = bpf_task_storage_get(&athreads, bpf_get_current_task_btf(), NULL, 0);
	if (!th || th->fn >= PCMON_AFN_FREE)
		return 0;
	if (th->fn == PCMON_AFN_POSIX_MEMALIGN) /* 0 and the block in *memptr */
		addr = addr || !th->old || bpf_probe_read_user(&addr, sizeof(addr), (void *)th->old) ?
			       0 : addr;
	/*
	 * realloc ends the old block whenever it succeeds (or frees it, with size 0): moved or
	 * grown in place, what it returns is a new allocation of the new size (sampled or not).
	 * A realloc that fails leaves the old block as it was.
	 */
	if (th->fn == PCMON_AFN_REALLOC && th->old && (addr || !th->size))
		block_freed(target, k.pid, th->old);
	th->fn = PCMON_AFN_N;
	if (!th->sampled || !addr)
		return 0;
	st = astat(target);
	r = bpf_map_lookup_elem(&arec_scratch, &(__u32){ 0 });
	if (!r)
		return 0;
	n = bpf_get_stack(ctx, r->ip, (max_depth < PCMON_STACK_MAX ? max_depth : PCMON_STACK_MAX) *
					      sizeof(__u64), BPF_F_USER_STACK);
	if (n < 0) {
		n = 0;
		if (st)
			st->stack_errors++;
	}
	if (n > (long)sizeof(r->ip))
		n = sizeof(r->ip);
	r->regs[0] = PT_REGS_RC(ctx);
	r->regs[1] = ctx->dx;
	r->regs[2] = ctx->cx;
	r->regs[3] = ctx->bx;
	r->regs[4] = ctx->si;
	r->regs[5] = ctx->di;
	r->regs[6] = ctx->bp;
	r->regs[7] = ctx->sp;
	r->regs[8] = ctx->r8;
	r->regs[9] = ctx->r9;
	r->regs[10] = ctx->r10;
	r->regs[11] = ctx->r11;
	r->regs[12] = ctx->r12;
	r->regs[13] = ctx->r13;
	r->regs[14] = ctx->r14;
	r->regs[15] = ctx->r15;
	r->regs[16] = ctx->ip;
	/* a read past the stack's top fails whole: halve until one succeeds */
	r->ulen = 0;
	for (__u32 i = 0, len = PCMON_ALLOC_TOP; i < 5; i++, len /= 2) {
		if (!bpf_probe_read_user(r->ustack, len & (2 * PCMON_ALLOC_TOP - 1),
					 (void *)ctx->sp)) {
			r->ulen = len;
			break;
		}
	}
	p = bpf_map_lookup_elem(&procs, &k.pid);
	r->kind = PCMON_AREC_ALLOC;
	r->target = target;
	r->pid = k.pid;
	r->epoch = p ? p->epoch : 0;
	r->tid = (__u32)pid_tgid;
	r->nip = n / sizeof(__u64);
	r->id = __sync_fetch_and_add(&next_id, 1);
	r->ts = bpf_ktime_get_ns();
	r->addr = addr;
	r->size = th->size;
	k.addr = addr;
	b.size = th->size;
	b.id = r->id;
	if (bpf_ringbuf_output(&arecs, r, offsetof(struct pcmon_arec, ip) + n, 0)) {
		if (st)
			st->ring_full++;
		return 0; /* (not kept live: its free would find no allocation) */
	}
	if (bpf_map_update_elem(&alive, &k, &b, BPF_ANY) && st)
		st->live_full++;
	return 0;
}

SEC("uretprobe")
int alloc_return(struct pt_regs *ctx)
{
	return leave(ctx);
}

extern bool bpf_session_is_return(void) __ksym __weak;

/*
 * Entry and return in one program, attached as a uprobe session (kernel 6.13 and later,
 * allocator.c): the return probe runs only for the calls whose entry asked for it, so an
 * allocation that is not sampled costs one trap, not two.
 */
SEC("uprobe")
int alloc_session(struct pt_regs *ctx)
{
	if (bpf_session_is_return()) {
		leave(ctx);
		return 0;
	}
	return enter(ctx, true) ? 0 : 1; /* 1: no return probe for this call */
}
