// SPDX-License-Identifier: GPL-2.0-only
/* Kernel addresses, named by /proc/kallsyms. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "sym_int.h"

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void load_kallsyms(struct sym *s)
{
	size_t cap = 0;
	char *buf, *line, *save;

	s->ksyms_loaded = true;
	buf = read_file("/proc/kallsyms", NULL);
	if (!buf) {
		pr_warn("cannot read /proc/kallsyms: %s (kernel frames stay unnamed)", strerror(errno));
		return;
	}
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char type, name[256];
		uint64_t addr;

		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) != 3 || !addr)
			continue;
		if (type != 't' && type != 'T' && type != 'W' && type != 'w')
			continue;
		if (GROW(s->ksyms, cap, s->nksyms + 1))
			break;
		s->ksyms[s->nksyms++] = (struct ksym){ .addr = addr, .name = sym_str_id(s, name) };
	}
	free(buf);
	if (s->nksyms)
		qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), ksym_cmp);
	if (!s->nksyms)
		pr_warn("/proc/kallsyms shows no addresses (kernel.kptr_restrict?): kernel frames stay unnamed");
}

const char *ksym_name(struct sym *s, uint64_t a)
{
	size_t lo;

	if (!s->ksyms_loaded)
		load_kallsyms(s);
	lo = sym_count_starting_by(s->ksyms, s->nksyms, sizeof(*s->ksyms), a);
	return lo ? sym_str(s, s->ksyms[lo - 1].name) : NULL;
}

uint32_t sym_kernel(struct sym *s, uint64_t pc, bool call_site)
{
	uint32_t loc;

	pc -= call_site;
	if (sym_loc_new(s, SYM_MOD_KERNEL, pc, &loc) > 0) /* named on first sight */
		sym_loc_done(s, loc, ksym_name(s, pc));
	return loc;
}

/* Frames of the tracing machinery itself (BPF programs, the tracepoint's call into them). */
bool sym_kernel_is_tracer(struct sym *s, uint64_t pc)
{
	static const char *const prefixes[] = { "bpf_prog_", "bpf_trace_run", "__bpf_trace_",
						 "perf_trace_", "trace_call_bpf", "__traceiter_",
						 "bpf_trampoline_" };
	const char *name = ksym_name(s, pc);

	for (size_t i = 0; name && i < ARRAY_SIZE(prefixes); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}
