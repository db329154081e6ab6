// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmon top: a live view of a target's hottest procedures (docs/exports.md). Every refresh is a
 * `list` of the target; the counts are those since it started or was last zeroed, so what
 * the screen shows is exactly what `pcmon list` would. ncurses draws it; -b prints the same
 * lines as text.
 *
 * ncurses is opened when top first draws, not linked: every library a command maps at
 * start-up makes it wait longer for a CPU on a loaded machine (cli/engine_load.c), and the
 * other commands draw nothing.
 */
#include <curses.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "proto.h"
#include "top.h"
#include "util.h"

static volatile sig_atomic_t top_quit;

static void on_signal(int sig)
{
	(void)sig;
	top_quit = 1;
}

struct row {
	const char *name;
	double shallow, deep;
};

static int by_shallow(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return x->shallow != y->shallow ? (x->shallow < y->shallow ? 1 : -1) :
	       x->deep != y->deep	  ? (x->deep < y->deep ? 1 : -1) :
					    strcmp(x->name, y->name);
}

static int by_deep(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return x->deep != y->deep	? (x->deep < y->deep ? 1 : -1) :
	       x->shallow != y->shallow ? (x->shallow < y->shallow ? 1 : -1) :
					  strcmp(x->name, y->name);
}

/* @procs's rows, sorted as the screen asks (into @rows, room for all). */
static int rows_of(const cJSON *procs, const struct top_state *st, struct row *rows)
{
	const cJSON *it;
	int k = 0;

	cJSON_ArrayForEach(it, procs)
		rows[k++] = (struct row){ proto_str(it, "procedure", "?"),
					  proto_num(it, "shallow", 0), proto_num(it, "deep", 0) };
	qsort(rows, k, sizeof(*rows), st->deep ? by_deep : by_shallow);
	return k;
}

/* A group's heading, as list prints it (format.c). */
static void group_heading(char *buf, size_t len, const cJSON *g)
{
	const char *by = proto_str(g, "by", "?"), *name = proto_str(g, "name", "");

	if (!name[0])
		name = "?";
	if (!strcmp(by, "process"))
		snprintf(buf, len, "process %.0f %s", proto_num(g, "pid", 0), name);
	else if (!strcmp(by, "thread"))
		snprintf(buf, len, "thread %.0f %s (pid %.0f)", proto_num(g, "tid", 0), name,
			 proto_num(g, "pid", 0));
	else
		snprintf(buf, len, "%s %s", by, name);
}

/*
 * The screen as lines of text: the summary, the keys if @keys, the table (at most @max rows). With
 * --by, each group's heading and its hottest procedures, the groups by share: room for all
 * of them if it can, for a few rows each at least.
 */
static char **render(const cJSON *rep, const struct top_state *st, int max, int width, bool keys,
		     int *n)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(rep, "target");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(rep, "summary");
	const cJSON *procs = cJSON_GetObjectItemCaseSensitive(rep, "procedures"), *it;
	const cJSON *groups = cJSON_GetObjectItemCaseSensitive(rep, "groups");
	int np = cJSON_GetArraySize(procs), nl = 0, ng = cJSON_GetArraySize(groups);
	int name_w = width > 40 ? width - 37 : 3;
	double counted = proto_num(s, "counted", 0);
	struct row *rows = calloc(np + 1, sizeof(*rows));
	char **lines = calloc(max + 8, sizeof(*lines)), state[64], head[320];

	if (!rows || !lines) {
		free(rows);
		free(lines);
		return NULL;
	}
	fmt_state(state, sizeof(state), t);
#define LINE(...) (asprintf(&lines[nl], __VA_ARGS__) < 0 ? (void)(lines[nl] = NULL) : (void)nl++)
	LINE("pcmon top: target %.0f \"%s\", %s t=%.0fus, %.1f s, %s%s", proto_num(t, "id", 0),
	     proto_str(t, "name", "?"), proto_str(t, "mode", "?"), proto_num(t, "interval_us", 0),
	     proto_num(t, "elapsed_s", 0), state, st->frozen ? "   [frozen]" : "");
	LINE("counted %.0f   foreignPcs %.0f   kernel-mode %.0f   lost %.0f   kernel frames %s",
	     counted, proto_num(s, "foreign", 0), proto_num(s, "kernel_mode", 0),
	     proto_num(s, "lost", 0), st->no_kernel ? "off" : "on");
	if (keys) /* (not in -b's text: there are no keys to press) */
		LINE("keys: s shallow  d deep  space freeze  z zero  k kernel frames  q quit");
	if (!groups) {
		LINE("%8s %7s %8s %7s  %s", "SHALLOW", "%", "DEEP", "%",
		     st->deep ? "PROCEDURE (by deep)" : "PROCEDURE (by shallow)");
		np = rows_of(procs, st, rows);
		for (int i = 0; i < np && nl < max + 4; i++)
			LINE("%8.0f %6.1f%% %8.0f %6.1f%%  %.*s", rows[i].shallow,
			     counted ? 100 * rows[i].shallow / counted : 0, rows[i].deep,
			     counted ? 100 * rows[i].deep / counted : 0, name_w, rows[i].name);
	} else {
		/* each group's heading and at least 3 rows, or its share of the screen */
		int per = ng ? (max - ng) / ng : 0;

		per = per < 3 ? 3 : per;
		LINE("%8s %7s %7s %8s %7s %7s  %s", "SHALLOW", "%GROUP", "%ALL", "DEEP", "%GROUP",
		     "%ALL", st->deep ? "PROCEDURE (by deep)" : "PROCEDURE (by shallow)");
		name_w = width > 56 ? width - 53 : 3;
		cJSON_ArrayForEach(it, groups) {
			double gc = proto_num(it, "counted", 0);
			const cJSON *gp = cJSON_GetObjectItemCaseSensitive(it, "procedures");
			struct row *gr = calloc(cJSON_GetArraySize(gp) + 1, sizeof(*gr));
			int k;

			if (nl >= max + 4 || !gr) {
				free(gr);
				break;
			}
			group_heading(head, sizeof(head), it);
			LINE("%.*s: %.0f counted (%.1f%%)", width > 30 ? width - 25 : 5, head, gc,
			     counted ? 100 * gc / counted : 0);
			k = rows_of(gp, st, gr);
			for (int i = 0; i < k && i < per && nl < max + 4; i++)
				LINE("%8.0f %6.1f%% %6.1f%% %8.0f %6.1f%% %6.1f%%  %.*s",
				     gr[i].shallow, gc ? 100 * gr[i].shallow / gc : 0,
				     counted ? 100 * gr[i].shallow / counted : 0, gr[i].deep,
				     gc ? 100 * gr[i].deep / gc : 0,
				     counted ? 100 * gr[i].deep / counted : 0, name_w, gr[i].name);
			free(gr);
		}
	}
#undef LINE
	free(rows);
	*n = nl;
	return lines;
}

static void free_lines(char **lines, int n)
{
	for (int i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
}

/* The target's listing now, or NULL with the error shown in @err. */
static cJSON *fetch(struct top_io *io, const struct top_state *st, char *err, size_t errlen)
{
	cJSON *req = proto_request("list"), *rep;

	cJSON_AddStringToObject(req, "target", io->target);
	if (st->no_kernel)
		cJSON_AddBoolToObject(req, "no_kernel", 1);
	if (io->by)
		cJSON_AddStringToObject(req, "by", io->by);
	rep = io->call(io->ctx, req);
	cJSON_Delete(req);
	if (!proto_bool(rep, "ok", 0)) {
		snprintf(err, errlen, "%s", proto_str(rep, "error", "no reply"));
		cJSON_Delete(rep);
		return NULL;
	}
	return rep;
}

static void simple(struct top_io *io, const char *cmd)
{
	cJSON *req = proto_request(cmd);

	cJSON_AddStringToObject(req, "target", io->target);
	cJSON_Delete(io->call(io->ctx, req));
	cJSON_Delete(req);
}

/* Serve the embedded engine, if any, for @ms; true if stdin became readable first. */
static bool wait_for(struct top_io *io, int ms, bool keys)
{
	uint64_t until = now_ns() + (uint64_t)ms * 1000000;

	while (!top_quit) {
		struct pollfd p[2] = { { .fd = keys ? STDIN_FILENO : -1, .events = POLLIN },
				       { .fd = io->engine_fd, .events = POLLIN } };
		uint64_t now = now_ns();
		int r;

		if (now >= until)
			return false;
		r = poll(p, 2, (int)((until - now) / 1000000) + 1);
		if (r < 0 && errno != EINTR)
			return false;
		if (r > 0 && p[1].revents)
			io->work(io->ctx);
		if (r > 0 && p[0].revents)
			return true;
	}
	return false;
}

static int batch(struct top_io *io, struct top_state *st, char *err, size_t errlen)
{
	for (long i = 0; !top_quit && (!io->iterations || i < io->iterations); i++) {
		cJSON *rep;
		char **lines;
		int n;

		wait_for(io, (int)(io->delay * 1000), false);
		if (!(rep = fetch(io, st, err, errlen)))
			return 1;
		lines = render(rep, st, 40, 200, false, &n);
		for (int j = 0; lines && j < n; j++)
			printf("%s\n", lines[j]);
		printf("\n");
		fflush(stdout);
		free_lines(lines, n);
		cJSON_Delete(rep);
	}
	return 0;
}

#define NCURSES_SO "libncursesw.so.6"

/* The part of ncurses top uses (the window is initscr()'s, the one its macros call stdscr). */
static struct {
	WINDOW *(*initscr)(void);
	int (*cbreak)(void), (*noecho)(void), (*endwin)(void), (*curs_set)(int);
	int (*nodelay)(WINDOW *, bool), (*keypad)(WINDOW *, bool);
	int (*werase)(WINDOW *), (*wmove)(WINDOW *, int, int), (*wrefresh)(WINDOW *);
	int (*waddnstr)(WINDOW *, const char *, int), (*wgetch)(WINDOW *);
	int *lines, *cols;
} nc;

static bool load_ncurses(void)
{
	const struct dl_sym syms[] = {
		{ "initscr", &nc.initscr },   { "cbreak", &nc.cbreak },	{ "noecho", &nc.noecho },
		{ "endwin", &nc.endwin },     { "curs_set", &nc.curs_set }, { "nodelay", &nc.nodelay },
		{ "keypad", &nc.keypad },     { "werase", &nc.werase },	{ "wmove", &nc.wmove },
		{ "wrefresh", &nc.wrefresh }, { "waddnstr", &nc.waddnstr }, { "wgetch", &nc.wgetch },
		{ "LINES", &nc.lines },	      { "COLS", &nc.cols },
	};
	void *h = dlopen(NCURSES_SO, RTLD_NOW | RTLD_LOCAL);

	return h && dl_bind(h, syms, ARRAY_SIZE(syms));
}

static int live(struct top_io *io, struct top_state *st, char *err, size_t errlen)
{
	cJSON *rep = NULL;
	int status = 0;
	bool refresh = true;
	WINDOW *w;

	if (!load_ncurses()) {
		snprintf(err, errlen, "cannot load %s (install libncursesw6); try -b", NCURSES_SO);
		return 1;
	}
	if (!(w = nc.initscr())) {
		snprintf(err, errlen, "cannot use the terminal (is TERM set?); try -b");
		return 1;
	}
	nc.cbreak();
	nc.noecho();
	nc.nodelay(w, TRUE);
	nc.keypad(w, TRUE);
	nc.curs_set(0);
	for (long i = 0; !top_quit;) {
		int ch, n;
		char **lines;

		if (refresh && !st->frozen) {
			cJSON_Delete(rep);
			if (!(rep = fetch(io, st, err, errlen))) {
				status = 1;
				break;
			}
			i++;
		}
		refresh = false;
		nc.werase(w);
		lines = render(rep, st, *nc.lines > 5 ? *nc.lines - 5 : 1, *nc.cols, true, &n);
		for (int j = 0; lines && j < n && j < *nc.lines; j++)
			if (nc.wmove(w, j + (j >= 3), 0) != ERR)
				nc.waddnstr(w, lines[j], *nc.cols);
		free_lines(lines, n);
		nc.wrefresh(w);
		if (io->iterations && i >= io->iterations)
			break;
		if (!wait_for(io, (int)(io->delay * 1000), true)) {
			refresh = true;
			continue;
		}
		while ((ch = nc.wgetch(w)) != ERR) {
			switch (ch) {
			case 'q':
				top_quit = 1;
				break;
			case 's':
				st->deep = false;
				break;
			case 'd':
				st->deep = true;
				break;
			case ' ':
				st->frozen = !st->frozen;
				refresh = !st->frozen;
				break;
			case 'z':
				simple(io, "zero");
				refresh = true;
				break;
			case 'k':
				st->no_kernel = !st->no_kernel;
				refresh = true;
				break;
			case KEY_RESIZE:
			default:
				break;
			}
		}
		/* a new order or a frozen screen redraws what it has; a new fetch waits its turn */
		if (st->frozen)
			refresh = false;
	}
	nc.endwin();
	cJSON_Delete(rep);
	return status;
}

int top_run(struct top_io *io, char *err, size_t errlen)
{
	struct top_state st = { .deep = io->deep };
	int r;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	r = io->batch ? batch(io, &st, err, errlen) : live(io, &st, err, errlen);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	return r;
}
