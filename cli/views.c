// SPDX-License-Identifier: GPL-2.0-only
/*
 * The per-line listing and profil's histogram, for people (docs/lines.md): the engine sends
 * counts, lines and up to 16 bytes of code per address; the source text is read here, with
 * the user's own rights, and the code disassembled with capstone.
 */
#include <capstone/capstone.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "proto.h"
#include "util.h"

/* ---- source files, read once each */

struct source {
	char *path;		/* as the line table names it */
	char *text;		/* NULL: not readable */
	char **lines;
	size_t nlines;
};

static struct source *sources;
static size_t nsources, cap_sources;

static char *read_source(const char *file, const char *comp_dir, const char *const *dirs,
			 size_t ndirs)
{
	char path[4096], *text = NULL;

	/* the line table's path (absolute, or relative to where it was compiled), else under
	 * each --source-dir: the path as given, then its last component */
	if (file[0] != '/' && comp_dir) {
		snprintf(path, sizeof(path), "%s/%s", comp_dir, file);
		text = read_file(path, NULL);
	}
	if (!text)
		text = read_file(file, NULL);
	for (size_t i = 0; !text && i < ndirs; i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], file);
		text = read_file(path, NULL);
		if (!text) {
			snprintf(path, sizeof(path), "%s/%s", dirs[i], basename_of(file));
			text = read_file(path, NULL);
		}
	}
	return text;
}

static const char *source_line(const char *file, const char *comp_dir, unsigned line,
			       const char *const *dirs, size_t ndirs)
{
	struct source *s = NULL;

	for (size_t i = 0; i < nsources && !s; i++)
		if (!strcmp(sources[i].path, file))
			s = &sources[i];
	if (!s) {
		size_t cap = 0;

		if (GROW(sources, cap_sources, nsources + 1))
			return NULL;
		s = &sources[nsources++];
		*s = (struct source){ .path = strdup(file), .text = read_source(file, comp_dir, dirs, ndirs) };
		for (char *p = s->text; p;) {
			char *nl = strchr(p, '\n');

			if (GROW(s->lines, cap, s->nlines + 1))
				break;
			s->lines[s->nlines++] = p;
			if (nl)
				*nl = '\0';
			p = nl ? nl + 1 : NULL;
		}
	}
	return line && line <= s->nlines ? s->lines[line - 1] : NULL;
}

static void sources_free(void)
{
	for (size_t i = 0; i < nsources; i++) {
		free(sources[i].path);
		free(sources[i].text);
		free(sources[i].lines);
	}
	free(sources);
	sources = NULL;
	nsources = cap_sources = 0;
}

/* ---- disassembly */

/*
 * Capstone is opened for a listing that disassembles, not linked: relocating its tables cost
 * every pcmon command a quarter of its start-up time. Without it, addresses stand alone.
 */
static struct {
	cs_err (*open)(cs_arch, cs_mode, csh *);
	size_t (*disasm)(csh, const uint8_t *, size_t, uint64_t, size_t, cs_insn **);
	void (*free)(cs_insn *, size_t);
	cs_err (*close)(csh *);
} cap;

static bool load_capstone(void)
{
	const struct dl_sym syms[] = {
		{ "cs_disasm", &cap.disasm },
		{ "cs_free", &cap.free },
		{ "cs_close", &cap.close },
		{ "cs_open", &cap.open }, /* last: it says "loaded" */
	};
	void *h;

	if (cap.open)
		return true;
	h = dlopen("libcapstone.so.4", RTLD_NOW | RTLD_LOCAL);
	return h && dl_bind(h, syms, ARRAY_SIZE(syms));
}

static void disasm(FILE *f, csh cs, const char *hex, uint64_t addr)
{
	unsigned char code[16];
	size_t n = 0;
	cs_insn *insn;

	for (; hex && hex[2 * n] && hex[2 * n + 1] && n < sizeof(code); n++) {
		unsigned v;

		if (sscanf(hex + 2 * n, "%2x", &v) != 1)
			break;
		code[n] = v;
	}
	if (!n) {
		fprintf(f, "(no code: the object is not open, as for results loaded from disk)");
		return;
	}
	if (cs && cap.disasm(cs, code, n, addr, 1, &insn) == 1) {
		fprintf(f, "%-7s %s", insn->mnemonic, insn->op_str);
		cap.free(insn, 1);
	} else {
		fprintf(f, "(%.8s...: not an instruction start)", hex);
	}
}

static double num(const cJSON *o, const char *k)
{
	return proto_num(o, k, 0);
}

void fmt_lines(FILE *f, const cJSON *rep, const char *const *dirs, size_t ndirs)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(rep, "lines"), *l, *a;
	bool tables = proto_bool(o, "line_tables", 0);
	csh cs = 0;

	if (!load_capstone() || cap.open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		cs = 0;
	fprintf(f, "pcmon: %s: %.0f samples, %.1f%% of %.0f counted\n",
		proto_str(o, "procedure", "?"), num(o, "count"),
		num(o, "counted") ? 100 * num(o, "count") / num(o, "counted") : 0, num(o, "counted"));
	if (!tables)
		fprintf(f, "no line tables in %s: addresses only\n", proto_str(o, "module", "?"));
	fprintf(f, "%8s %7s %7s  %s\n", "COUNT", "%PROC", "%ALL", tables ? "LINE" : "");
	cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(o, "lines")) {
		const char *file = proto_str(l, "file", ""), *text;
		unsigned line = num(l, "line");

		if (tables) {
			text = source_line(file, proto_str(o, "comp_dir", NULL), line, dirs, ndirs);
			fprintf(f, "%8.0f %6.1f%% %6.1f%%  %s:%u%s%s\n", num(l, "count"),
				num(l, "percent_of_procedure"), num(l, "percent_of_counted"),
				line ? basename_of(file) : "?", line, text ? "   " : "",
				text ? text + strspn(text, " \t") : "");
		}
		cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(l, "addresses")) {
			uint64_t addr = strtoull(proto_str(a, "address", "0"), NULL, 16);

			fprintf(f, "%8.0f %23s0x%-10" PRIx64 "  ", num(a, "count"), "", addr);
			disasm(f, cs, proto_str(a, "code", NULL), addr);
			fputc('\n', f);
		}
	}
	if (cs)
		cap.close(&cs);
	sources_free();
}

void fmt_profil(FILE *f, const cJSON *rep)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(rep, "profil"), *d;
	double scale = num(o, "scale");

	fprintf(f, "pcmon: profil of %s from %s, scale 0x%x", proto_str(o, "module", "?"),
		proto_str(o, "offset", "?"), (unsigned)scale);
	if (proto_bool(o, "off", 0))
		fprintf(f, " (off: no cell counts)");
	else if (scale == 2)
		fprintf(f, " (the whole region in cell 0)");
	else
		fprintf(f, " (one cell per %.4g bytes)", 131072 / scale);
	fprintf(f, ", bufsiz %.0f (%.0f cells)\n", num(o, "bufsiz"), num(o, "bufsiz") / 2);
	fprintf(f, "samples %.0f: in cells %.0f, outside the buffer %.0f\n", num(o, "samples"),
		num(o, "inside"), num(o, "outside"));
	fprintf(f, "%8s %8s %18s %18s  %s\n", "CELL", "COUNT", "FROM", "TO", "PROCEDURE  LINE");
	cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(o, "detail")) {
		fprintf(f, "%8.0f %8.0f %18s %18s  %s  %s:%.0f\n", num(d, "cell"), num(d, "count"),
			proto_str(d, "lo", "?"), proto_str(d, "hi", "end"), proto_str(d, "procedure", "?"),
			basename_of(proto_str(d, "file", "?")), num(d, "line"));
	}
}
