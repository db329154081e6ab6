// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmond's configuration file: read (inih parses, this file checks), compared with the one in
 * force, and applied through engine_handle(). See conf.h.
 */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "proto.h"
#include "util.h"

/* ---- [daemon]: pcmond's settings */

#define CONF_ROW(id, name, sh, kind, lo, hi, unit) { name, sh, kind, lo, hi, unit },
const struct conf_setting conf_settings[CONF_NSETTINGS] = { CONF_DAEMON_SETTINGS(CONF_ROW) };
#undef CONF_ROW

/* yes/no and their other spellings: 1, 0, or -1 for neither. */
static int parse_flag(const char *s)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(s, yes[i]))
			return 1;
		if (!strcasecmp(s, no[i]))
			return 0;
	}
	return -1;
}

/* A whole number of @unit in [lo, hi], or what is wrong with @s. */
static int parse_num(const char *s, long lo, long hi, const char *unit, long *out, char *why,
		     size_t whylen)
{
	long v;

	if (parse_whole(s, LONG_MIN, LONG_MAX, &v) ||
	    !isdigit((unsigned char)s[*s == '-'])) { /* not " 5" or "+5" */
		snprintf(why, whylen, "\"%.40s\" is not a number of %s", s, unit);
		return -EINVAL;
	}
	if (v < lo || v > hi) {
		snprintf(why, whylen, "\"%.40s\" is not a number of %s from %ld to %ld", s, unit, lo,
			 hi);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int conf_daemon_set(struct conf_daemon *d, const char *name, const char *value, int line,
		    char *why, size_t whylen)
{
	const struct conf_setting *s = NULL;
	struct conf_value *v;
	long n = 0;
	int i;

	for (i = 0; i < CONF_NSETTINGS && !s; i++)
		if (!strcmp(conf_settings[i].name, name))
			s = &conf_settings[i];
	if (!s)
		return -ENOENT;
	v = &d->v[i - 1];
	switch (s->kind) {
	case CONF_NUM:
		if (parse_num(value, s->min, s->max, s->unit, &n, why, whylen))
			return -EINVAL;
		break;
	case CONF_FLAG:
		n = parse_flag(value);
		if (n < 0) {
			snprintf(why, whylen, "\"%.40s\" is not yes or no", value);
			return -EINVAL;
		}
		break;
	case CONF_STR:
		/* debuginfod = (nothing) turns fetching off, as --debuginfod "" does */
		if (!*value && i - 1 != CONF_DEBUGINFOD) {
			snprintf(why, whylen, "give a value");
			return -EINVAL;
		}
		free(v->str);
		v->str = strdup(value);
		if (!v->str)
			return -ENOMEM;
		break;
	}
	v->set = true;
	v->line = line;
	v->num = n;
	return 0;
}

int conf_daemon_merge(struct conf_daemon *d, const struct conf_daemon *from)
{
	for (int i = 0; i < CONF_NSETTINGS; i++) {
		if (d->v[i].set || !from->v[i].set)
			continue;
		d->v[i] = from->v[i];
		if (from->v[i].str && !(d->v[i].str = strdup(from->v[i].str)))
			return -ENOMEM;
	}
	return 0;
}

int conf_daemon_check(const struct conf_daemon *d, enum conf_setting_id *bad, char *why,
		      size_t whylen)
{
	const struct conf_value *all = &d->v[CONF_MAX_CLIENTS], *one = &d->v[CONF_MAX_USER_CLIENTS];
	uint32_t max = all->set ? all->num : SRV_DEFAULT_MAX_CLIENTS;

	if (one->set && one->num > max - SRV_ROOT_RESERVE) {
		*bad = CONF_MAX_USER_CLIENTS;
		snprintf(why, whylen, "%u is more than max-clients (%u) less the %d kept for root",
			 one->num, max, SRV_ROOT_RESERVE);
		return -EINVAL;
	}
	return 0;
}

void conf_daemon_opts(const struct conf_daemon *d, struct engine_opts *eo, struct srv_opts *so,
		      const char **sock)
{
	const struct conf_value *v = d->v;

#define NUM(id, dflt) (v[CONF_##id].set ? v[CONF_##id].num : (dflt))
#define STR(id, dflt) (v[CONF_##id].set ? v[CONF_##id].str : (dflt))
	*sock = STR(SOCKET, PCMON_DEFAULT_SOCKET);
	eo->state_dir = STR(STATE_DIR, PCMON_DEFAULT_STATE_DIR);
	eo->cache_dir = STR(CACHE_DIR, PCMON_DEFAULT_CACHE_DIR);
	eo->debuginfod = STR(DEBUGINFOD, NULL);
	eo->max_depth = NUM(MAX_STACK, 0);
	eo->dwarf_stack = NUM(DWARF_STACK, 0);
	eo->user_targets = NUM(USER_TARGETS, 0);
	eo->user_memory = (uint64_t)NUM(USER_MEMORY, 0) << 20;
	eo->counts_entries = NUM(DRAIN_ENTRIES, 0);
	eo->bpf_stats = NUM(BPF_STATS, 0);
	eo->object_idle_s = NUM(OBJECT_IDLE, 0);
	eo->object_memory = (uint64_t)NUM(OBJECT_MEMORY, 0) << 20;
	/* (0 MiB: none; unset: the engine's default) */
	eo->cfi_tables = (uint64_t)NUM(CFI_TABLES, PCMON_CFI_TABLES_DEFAULT_MIB) << 20;
	so->max_clients = NUM(MAX_CLIENTS, 0);
	so->per_user = NUM(MAX_USER_CLIENTS, 0);
	so->idle_s = NUM(IDLE_TIMEOUT, 0);
	so->request_s = NUM(REQUEST_TIMEOUT, 0);
	so->write_s = NUM(WRITE_TIMEOUT, 0);
#undef NUM
#undef STR
}

void conf_daemon_free(struct conf_daemon *d)
{
	for (int i = 0; i < CONF_NSETTINGS; i++) {
		free(d->v[i].str);
		d->v[i].str = NULL;
	}
}

/* ---- [target NAME]: a start request */

/*
 * The keys of a target section are pcmon start's options, without their dashes: a flag is a
 * key with yes or no, --virtual and --real are mode = virtual|real. What each value may be
 * is the start field's (engine_start_field()): the engine's own check, made here too. Those
 * of sampling, allocations and probe nodes: call counting needs a process (not_keys[]),
 * allocations a cgroup and nodes a program (target_end()). node and hist-arg are both the
 * nodes' list: a node a line, hist-arg set on the node above it.
 */
static const struct target_key {
	const char *key;
	const char *field;	/* the start request's */
	const char *unit;	/* of a number */
	bool negate;		/* a flag that sets its field false (no-children) */
} target_keys[] = {
#define K(k, f) { .key = (k), .field = (f) }
#define K_NUM(k, f, u) { .key = (k), .field = (f), .unit = (u) }
	K("all", "all"),
	K("cgroup", "cgroup"),
	{ .key = "no-children", .field = "children", .negate = true },
	K("publish", "publish"),
	K("mode", "mode"),
	K_NUM("interval", "interval_us", "microseconds"),
	K("unwind", "unwind"),
	K("kernel", "kernel"),
	K("when", "when"),
	K("critical", "critical"),
	K("ignore-case", "icase"),
	K("no-inline", "no_inline"),
	K("no-sample", "no_sample"),
	K("alloc", "alloc"),
	K_NUM("alloc-rate", "alloc_rate", "bytes"),
	K("alloc-functions", "alloc_functions"),
	K("program", "exe"),
	K("node", "nodes"),
	K("hist-arg", "nodes"),
	K("leg", "legs"),
	K("hist", "hists"),
	K("track", "track"),
	K("add", "add"),
	K("tail", "tails"),
#undef K
#undef K_NUM
};
#define NKEYS ARRAY_SIZE(target_keys)

static int key_index(const char *key)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(target_keys[i].key, key))
			return i;
	return -1;
}

/* Why a start option is no key: what to write instead. */
#define NEEDS_PID(what) \
	what " need a process (--pid or a command): a cgroup's or every task's objects are not known in advance"
static const struct {
	const char *key, *why;
} not_keys[] = {
	{ "pid", "a process's id is not known before it starts: watch its cgroup, or all" },
	{ "name", "the section names the target: [target NAME]" },
	{ "when-file", "give the pattern itself: when = PATTERN" },
	{ "virtual", "write mode = virtual" },
	{ "real", "write mode = real" },
	{ "count", NEEDS_PID("call counts") },
	{ "max-probes", NEEDS_PID("call counts") },
};
#undef NEEDS_PID

/* The reading of one file: the line inih works on, the section it is in. */
struct rd {
	struct conf *c;
	FILE *f;
	char *buf;
	size_t cap;
	int line;		/* the line handed to inih last */
	bool key_line;		/* it looks like a key = value line ... */
	bool handled;		/* ... and inih handed it over as one */
	enum { S_NONE, S_DAEMON, S_TARGET, S_SKIP } sect;
	int daemon_line;	/* of [daemon], 0: none yet */
	struct conf_target *t;	/* S_TARGET: the one being read */
	int key_at[NKEYS];	/* its keys' lines */
	size_t errors_before;	/* errors told before it: its keys' own make its end's moot */
};

static void conf_err(struct conf *c, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void conf_err(struct conf *c, int line, const char *fmt, ...)
{
	char msg[512], *s;
	va_list ap;
	size_t i;

	if (c->nerrors >= CONF_MAX_ERRORS) {
		c->more_errors++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line > 0 ? asprintf(&s, "%s:%d: %s", c->path, line, msg) < 0
		     : asprintf(&s, "%s: %s", c->path, msg) < 0)
		return;
	/* in the order of the lines: a section's own errors are found at its end */
	for (i = c->nerrors; i > 0 && c->error_lines[i - 1] > line; i--) {
		c->errors[i] = c->errors[i - 1];
		c->error_lines[i] = c->error_lines[i - 1];
	}
	c->errors[i] = s;
	c->error_lines[i] = line;
	c->nerrors++;
}

/* Has an error been told about @line? */
static bool err_at(const struct conf *c, int line)
{
	for (size_t i = 0; i < c->nerrors; i++)
		if (c->error_lines[i] == line)
			return true;
	return false;
}

static bool valid_name(const char *s)
{
	bool digits = true;
	size_t n = strlen(s);

	if (!n || n > CONF_MAX_NAME)
		return false;
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
			return false;
		digits &= !!isdigit((unsigned char)*s);
	}
	return !digits; /* a name of digits alone would be taken for a target id */
}

/* A target section ends: what no single key can say. */
static void target_end(struct rd *rd)
{
	struct conf_target *t = rd->t;
	const cJSON *cg = cJSON_GetObjectItemCaseSensitive(t->req, "cgroup");
	bool all = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t->req, "all"));
	bool nodes = cJSON_GetObjectItemCaseSensitive(t->req, "nodes") != NULL;

	rd->t = NULL;
	if (rd->c->nerrors + rd->c->more_errors > rd->errors_before)
		return;
	if (all && cg)
		conf_err(rd->c, t->line, "[target %s]: all = yes and cgroup: give one of them", t->name);
	else if (!all && !cg)
		conf_err(rd->c, t->line, "[target %s]: say what it watches: all = yes, or cgroup = DIR",
			 t->name);
	else if (!nodes && (cJSON_GetObjectItemCaseSensitive(t->req, "legs") ||
			    cJSON_GetObjectItemCaseSensitive(t->req, "hists") ||
			    cJSON_GetObjectItemCaseSensitive(t->req, "track") ||
			    cJSON_GetObjectItemCaseSensitive(t->req, "add") ||
			    cJSON_GetObjectItemCaseSensitive(t->req, "tails")))
		conf_err(rd->c, t->line, "[target %s]: leg, hist, track, add and tail go with nodes: give them with node = ..., or leave them out",
			 t->name);
	else if (nodes && !proto_str(t->req, "exe", NULL))
		conf_err(rd->c, t->line, "[target %s]: its nodes are in a program: name it, program = PATH",
			 t->name);
	else if (proto_bool(t->req, "no_sample", 0) && !proto_bool(t->req, "alloc", 0) && !nodes)
		conf_err(rd->c, t->line, "[target %s]: no-sample = yes leaves it nothing to do: give alloc = yes or nodes too, or leave no-sample out",
			 t->name);
	else if (all && proto_bool(t->req, "alloc", 0))
		conf_err(rd->c, t->line, "[target %s]: alloc = yes watches a cgroup, not all tasks: each would trap on every allocator call (give cgroup = DIR)",
			 t->name);
	/* BPF has one all target: a second would take the first one's new processes */
	for (size_t i = 0; all && &rd->c->targets[i] != t; i++)
		if (proto_bool(rd->c->targets[i].req, "all", 0))
			conf_err(rd->c, t->line, "[target %s]: all = yes, as [target %s] (line %d): one target watches all tasks",
				 t->name, rd->c->targets[i].name, rd->c->targets[i].line);
}

static void section_end(struct rd *rd)
{
	struct conf_daemon *d = &rd->c->d;
	enum conf_setting_id bad;
	char why[160];

	if (rd->sect == S_TARGET && rd->t)
		target_end(rd);
	if (rd->sect == S_DAEMON && conf_daemon_check(d, &bad, why, sizeof(why)))
		conf_err(rd->c, d->v[bad].line, "[daemon] %s: %s", conf_settings[bad].name, why);
	rd->sect = S_NONE;
}

/* A [section] line: @text is what is between the brackets. */
static void section_begin(struct rd *rd, char *text)
{
	struct conf *c = rd->c;
	struct conf_target *t;
	char *name;
	size_t cap;

	section_end(rd);
	rd->sect = S_SKIP; /* the keys of a section in error are not looked at */
	while (isspace((unsigned char)*text))
		text++;
	for (char *e = text + strlen(text); e > text && isspace((unsigned char)e[-1]);)
		*--e = '\0';
	if (!strcmp(text, "daemon")) {
		if (rd->daemon_line)
			conf_err(c, rd->line, "[daemon] given twice (first at line %d)", rd->daemon_line);
		else
			rd->sect = S_DAEMON, rd->daemon_line = rd->line;
		return;
	}
	if (strncmp(text, "target", 6) || (text[6] && !isspace((unsigned char)text[6]))) {
		conf_err(c, rd->line, "unknown section [%.64s]: the sections are [daemon] and [target NAME]",
			 text);
		return;
	}
	for (name = text + 6; isspace((unsigned char)*name); name++)
		;
	if (!*name) {
		conf_err(c, rd->line, "[target]: name the target: [target NAME]");
		return;
	}
	if (!valid_name(name)) {
		conf_err(c, rd->line, "[target %.64s]: a target's name is letters, digits, '.', '-' and '_', at most %d of them, not digits alone",
			 name, CONF_MAX_NAME);
		return;
	}
	if ((t = conf_find(c, name))) {
		conf_err(c, rd->line, "[target %s] given twice (first at line %d)", name, t->line);
		return;
	}
	cap = c->ntargets;
	if (GROW(c->targets, cap, c->ntargets + 1))
		return;
	t = &c->targets[c->ntargets];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->line = rd->line;
	t->req = proto_request("start");
	if (!t->req || !cJSON_AddStringToObject(t->req, "name", name)) {
		cJSON_Delete(t->req);
		return;
	}
	c->ntargets++;
	rd->t = t;
	rd->sect = S_TARGET;
	memset(rd->key_at, 0, sizeof(rd->key_at));
	rd->errors_before = c->nerrors + c->more_errors;
}

static void daemon_key(struct rd *rd, const char *key, const char *value)
{
	struct conf *c = rd->c;
	char why[160];
	int r, first = 0;

	for (int i = 0; i < CONF_NSETTINGS; i++)
		if (!strcmp(conf_settings[i].name, key) && c->d.v[i].set)
			first = c->d.v[i].line;
	if (first) {
		conf_err(c, rd->line, "[daemon] %s: given twice (first at line %d)", key, first);
		return;
	}
	r = conf_daemon_set(&c->d, key, value, rd->line, why, sizeof(why));
	if (r == -ENOENT)
		conf_err(c, rd->line, "[daemon] %.64s: unknown key (the keys of [daemon] are pcmond's options: socket, state-dir, max-stack, ... as pcmond(8) lists them)",
			 key);
	else if (r == -EINVAL)
		conf_err(c, rd->line, "[daemon] %s: %s", key, why);
}

/*
 * @value as the start field @f wants it, or NULL with what is wrong in @why. proto_check()
 * has the last word: the value must pass the engine's own check of the field.
 */
static cJSON *field_value(const struct proto_field *f, const struct target_key *k,
			  const char *value, char *why, size_t whylen)
{
	cJSON *v = NULL;
	long n;
	int b;

	switch (f->type) {
	case PT_BOOL:
		b = parse_flag(value);
		if (b < 0) {
			snprintf(why, whylen, "\"%.40s\" is not yes or no", value);
			return NULL;
		}
		v = cJSON_CreateBool(k->negate ? !b : b);
		break;
	case PT_UINT:
		if (parse_num(value, f->min, f->max, k->unit, &n, why, whylen))
			return NULL;
		v = cJSON_CreateNumber(n);
		break;
	case PT_ENUM:
	case PT_STR:
	case PT_STRS:
		if (!*value) {
			snprintf(why, whylen, "give a value");
			return NULL;
		}
		if (f->type == PT_STRS) /* one more of a list: the caller joins them */
			v = cJSON_CreateStringArray(&value, 1);
		else
			v = cJSON_CreateString(value);
		break;
	case PT_NODES: /* (likewise) */
		if (!*value) {
			snprintf(why, whylen, "give a value");
			return NULL;
		}
		v = cJSON_CreateArray();
		if (v && !cJSON_AddItemToArray(v, cJSON_CreateObject()))
			cJSON_Delete(v), v = NULL;
		if (v && !cJSON_AddStringToObject(cJSON_GetArrayItem(v, 0), "spec", value))
			cJSON_Delete(v), v = NULL;
		break;
	default:
		snprintf(why, whylen, "is no key of a target section");
		return NULL;
	}
	if (!v) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	{
		cJSON *one = cJSON_CreateObject();
		char err[160];

		if (!one || !cJSON_AddItemReferenceToObject(one, f->name, v) ||
		    proto_check(one, f, 1, err, sizeof(err))) {
			if (f->type == PT_ENUM)
				snprintf(why, whylen, "\"%.40s\" is not one of %s", value, f->values);
			else if (f->type != PT_BOOL && f->type != PT_UINT)
				snprintf(why, whylen, "longer than %.0f bytes", f->max);
			else
				snprintf(why, whylen, "%s", one ? err : "out of memory");
			cJSON_Delete(one);
			cJSON_Delete(v);
			return NULL;
		}
		cJSON_Delete(one);
	}
	return v;
}

/* hist-arg = N: the integer argument the node above it records (--hist-arg). */
static void hist_arg(struct rd *rd, cJSON *nodes, const char *value)
{
	cJSON *last = cJSON_GetArrayItem(nodes, cJSON_GetArraySize(nodes) - 1);
	char why[160]; /* (parse_num's own words name no unit: ours say it) */
	long n;

	if (!last)
		conf_err(rd->c, rd->line, "[target %s] hist-arg: give it after the node it applies to",
			 rd->t->name);
	else if (cJSON_GetObjectItemCaseSensitive(last, "arg"))
		conf_err(rd->c, rd->line, "[target %s] hist-arg: given twice for the node above it",
			 rd->t->name);
	else if (parse_num(value, 0, 5, "", &n, why, sizeof(why)))
		conf_err(rd->c, rd->line, "[target %s] hist-arg: \"%.40s\" is not an argument's number from 0 to 5",
			 rd->t->name, value);
	else
		cJSON_AddNumberToObject(last, "arg", n);
}

static void target_key(struct rd *rd, const char *key, const char *value)
{
	struct conf_target *t = rd->t;
	int i = key_index(key);
	const struct target_key *k = i >= 0 ? &target_keys[i] : NULL;
	const struct proto_field *f;
	cJSON *v, *have;
	char why[200];

	if (!k) {
		for (size_t j = 0; j < ARRAY_SIZE(not_keys); j++) {
			if (!strcmp(not_keys[j].key, key)) {
				conf_err(rd->c, rd->line, "[target %s] %s: not a key here: %s", t->name,
					 key, not_keys[j].why);
				return;
			}
		}
		conf_err(rd->c, rd->line, "[target %s] %.64s: unknown key (the keys of a target are pcmon start's options: all, cgroup, interval, unwind, mode, ... as pcmond(8) lists them)",
			 t->name, key);
		return;
	}
	f = engine_start_field(k->field);
	if (!f) {
		conf_err(rd->c, rd->line, "[target %s] %s: this pcmond takes no field \"%s\"", t->name,
			 key, k->field);
		return;
	}
	have = cJSON_GetObjectItemCaseSensitive(t->req, f->name);
	if (!strcmp(key, "hist-arg")) {
		hist_arg(rd, have, value);
		return;
	}
	/* a list's key may be given again: each line adds one (critical, node) */
	if (rd->key_at[i] && f->type != PT_STRS && f->type != PT_NODES) {
		conf_err(rd->c, rd->line, "[target %s] %s: given twice (first at line %d)", t->name, key,
			 rd->key_at[i]);
		return;
	}
	if (!strcmp(key, "program") && value[0] != '/') {
		conf_err(rd->c, rd->line, "[target %s] program: \"%.64s\" is not an absolute path (the program file its nodes are in)",
			 t->name, value);
		return;
	}
	if (!strcmp(key, "cgroup") && value[0] != '/') {
		conf_err(rd->c, rd->line, "[target %s] cgroup: \"%.64s\" is not an absolute path (a directory under /sys/fs/cgroup)",
			 t->name, value);
		return;
	}
	v = field_value(f, k, value, why, sizeof(why));
	if (!v) {
		conf_err(rd->c, rd->line, "[target %s] %s: %s", t->name, key, why);
		return;
	}
	rd->key_at[i] = rd->line;
	if (have && (f->type == PT_STRS || f->type == PT_NODES)) {
		cJSON_AddItemToArray(have, cJSON_DetachItemFromArray(v, 0));
		cJSON_Delete(v);
	} else {
		cJSON_AddItemToObject(t->req, f->name, v);
	}
}

/* inih's handler: one key = value line (@section is inih's; ours is rd->sect). */
static int on_key(void *user, const char *section, const char *key, const char *value)
{
	struct rd *rd = user;

	(void)section; /* the reader saw the [section] line: rd->sect says what it is */
	rd->handled = true;
	switch (rd->sect) {
	case S_NONE:
		conf_err(rd->c, rd->line, "%.64s: a key outside any section: put it under [daemon] or [target NAME]",
			 key);
		break;
	case S_DAEMON:
		daemon_key(rd, key, value);
		break;
	case S_TARGET:
		target_key(rd, key, value);
		break;
	case S_SKIP:
		break;
	}
	return 1; /* errors are ours to tell; inih's return then says only what it refused */
}

/* The line before, as inih took it: a line that looked like a key and was not handed over
 * is none. */
static void line_done(struct rd *rd)
{
	if (rd->key_line && !rd->handled && !err_at(rd->c, rd->line))
		conf_err(rd->c, rd->line, "not a [section], a key = value line or a comment");
	rd->key_line = rd->handled = false;
}

/*
 * inih's reader: one whole line at a time, so that rd->line is the line whose key inih hands
 * over next. It also sees each [section] line as it passes: inih tells the handler only
 * about keys, and a section without keys must not go unnoticed (an empty [target NAME], an
 * unknown section). A line too long for inih's buffer is an error, not two lines.
 */
static char *reader(char *str, int num, void *stream)
{
	struct rd *rd = stream;
	ssize_t n;
	char *s;

	line_done(rd);
	n = getline(&rd->buf, &rd->cap, rd->f);
	if (n < 0)
		return NULL;
	rd->line++;
	if (memchr(rd->buf, '\0', n)) {
		conf_err(rd->c, rd->line, "a NUL byte: this is not a text file");
		snprintf(str, num, "\n");
		return str;
	}
	if (n > num - 1) {
		conf_err(rd->c, rd->line, "longer than %d characters", num - 2);
		snprintf(str, num, "\n");
		return str;
	}
	memcpy(str, rd->buf, n + 1);
	s = str;
	if (rd->line == 1 && !memcmp(s, "\xef\xbb\xbf", 3)) /* a byte-order mark, as inih allows */
		s += 3;
	while (isspace((unsigned char)*s))
		s++;
	if (*s == '[') {
		char *end = strchr(s, ']'), *rest, text[CONF_MAX_LINE];

		if (!end) {
			conf_err(rd->c, rd->line, "a [section] line without its ']'");
			rd->sect = S_SKIP;
			return str;
		}
		for (rest = end + 1; isspace((unsigned char)*rest); rest++)
			;
		if (*rest && *rest != ';' && *rest != '#')
			conf_err(rd->c, rd->line, "text after the ']' of a [section] line");
		snprintf(text, sizeof(text), "%.*s", (int)(end - s - 1), s + 1);
		section_begin(rd, text);
	} else if (*s && *s != ';' && *s != '#') {
		rd->key_line = true;
	}
	return str;
}

/* An empty configuration, named @path. */
static struct conf *conf_new(const char *path)
{
	struct conf *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->path = strdup(path);
	c->errors = calloc(CONF_MAX_ERRORS, sizeof(*c->errors));
	c->error_lines = calloc(CONF_MAX_ERRORS, sizeof(*c->error_lines));
	if (!c->path || !c->errors || !c->error_lines) {
		conf_free(c);
		return NULL;
	}
	return c;
}

struct conf *conf_parse(FILE *f, const char *path)
{
	struct conf *c = conf_new(path);
	struct rd rd = { .c = c, .f = f };
	int r;

	if (!c)
		return NULL;
	/* Debian's inih takes its options at run time: a line is what it says, not the
	 * continuation of the key above it; lines up to CONF_MAX_LINE */
	ini_allow_multiline = false;
	ini_max_line = CONF_MAX_LINE;
	r = ini_parse_stream(reader, &rd, on_key, &rd);
	line_done(&rd);
	section_end(&rd);
	free(rd.buf);
	if (ferror(f))
		conf_err(c, 0, "cannot read: %s", strerror(errno));
	else if (r > 0 && !err_at(c, r)) /* what inih refused that the reader did not see */
		conf_err(c, r, "not a [section], a key = value line or a comment");
	else if (r < 0)
		conf_err(c, 0, "cannot read (inih: %d)", r);
	return c;
}

struct conf *conf_read(const char *path, bool required)
{
	struct conf *c;
	struct stat st;
	FILE *f = fopen(path, "re");

	if (!f) {
		int err = errno;

		c = conf_new(path);
		if (c && (required || err != ENOENT))
			conf_err(c, 0, "%s", strerror(err));
		return c;
	}
	if (fstat(fileno(f), &st) || (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))) {
		c = conf_new(path);
		if (c)
			conf_err(c, 0, "not a file");
		fclose(f);
		return c;
	}
	c = conf_parse(f, path);
	/* it starts root's targets: only root (or the user running pcmond) may write it
	 * (/dev/null, a device, is as empty as it is writable) */
	if (c && S_ISREG(st.st_mode) &&
	    ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH))))
		conf_err(c, 0, "writable by users other than %s: chown root and chmod go-w",
			 geteuid() ? "its owner" : "root");
	fclose(f);
	return c;
}

void conf_free(struct conf *c)
{
	if (!c)
		return;
	conf_daemon_free(&c->d);
	for (size_t i = 0; i < c->ntargets; i++)
		cJSON_Delete(c->targets[i].req);
	free(c->targets);
	for (size_t i = 0; c->errors && i < c->nerrors; i++)
		free(c->errors[i]);
	free(c->errors);
	free(c->error_lines);
	free(c->path);
	free(c);
}

struct conf_target *conf_find(const struct conf *c, const char *name)
{
	for (size_t i = 0; c && i < c->ntargets; i++)
		if (!strcmp(c->targets[i].name, name))
			return &c->targets[i];
	return NULL;
}

/* ---- from the file in force to the new one */

/* Root's target @id, still named @name? */
static const struct conf_seen *ours(const struct conf_seen *seen, size_t n, uint32_t id,
				    const char *name)
{
	for (size_t i = 0; id && i < n; i++)
		if (seen[i].id == id && seen[i].owner == 0 && !strcmp(seen[i].name, name))
			return &seen[i];
	return NULL;
}

static struct conf_step *step(struct conf_step **steps, size_t *n, size_t *cap, enum conf_op op,
			      uint32_t id, struct conf_target *t)
{
	struct conf_step *s;

	if (GROW(*steps, *cap, *n + 1))
		return NULL;
	s = &(*steps)[(*n)++];
	memset(s, 0, sizeof(*s));
	s->op = op;
	s->id = id;
	s->t = t;
	return s;
}

/* The step list of conf_plan(), in the order it is made. */
static int plan_sections(const struct conf *old, struct conf *new, const struct conf_seen *seen,
			 size_t nseen, bool *start, struct conf_step **steps, size_t *nsteps,
			 size_t *cap)
{
	struct conf_step *s;

	for (size_t i = 0; i < new->ntargets; i++) {
		struct conf_target *t = &new->targets[i];
		const struct conf_target *o = conf_find(old, t->name);
		const struct conf_seen *have = o ? ours(seen, nseen, o->id, o->name) : NULL;
		const struct conf_seen *other = NULL;

		t->id = 0;
		/* unchanged, and its target is still there (stopped by hand, it stays so) */
		if (have && cJSON_Compare(o->req, t->req, true)) {
			t->id = have->id;
			if (!step(steps, nsteps, cap, CONF_KEEP, have->id, t))
				return -ENOMEM;
			continue;
		}
		/* root's live target of the name that is not the section's: not doubled */
		for (size_t k = 0; k < nseen && !other; k++)
			if (seen[k].owner == 0 && seen[k].live && !strcmp(seen[k].name, t->name) &&
			    (!have || seen[k].id != have->id))
				other = &seen[k];
		if (other) {
			if (!step(steps, nsteps, cap, CONF_BLOCKED, other->id, t))
				return -ENOMEM;
			continue;
		}
		if (have && have->live) {
			if (!(s = step(steps, nsteps, cap, CONF_STOP, have->id, t)))
				return -ENOMEM;
			s->why = "changed";
			snprintf(s->name, sizeof(s->name), "%s", t->name);
		}
		start[i] = true;
	}
	/* the names go to the new targets; stopped ones keep theirs with their id */
	for (size_t i = 0; i < new->ntargets; i++) {
		for (size_t k = 0; start[i] && k < nseen; k++) {
			struct conf_target *t = &new->targets[i];

			if (seen[k].owner || strcmp(seen[k].name, t->name))
				continue;
			if (!(s = step(steps, nsteps, cap, CONF_RENAME, seen[k].id, t)))
				return -ENOMEM;
			snprintf(s->name, sizeof(s->name), "%s@%u", t->name, seen[k].id);
		}
	}
	/*
	 * A process is in the first target that takes it, and an all target takes every one
	 * it sees: cgroup targets start first, so that the processes of their cgroups are
	 * theirs, whatever was sampled in between.
	 */
	for (int all = 0; all < 2; all++)
		for (size_t i = 0; i < new->ntargets; i++)
			if (start[i] && proto_bool(new->targets[i].req, "all", 0) == all &&
			    !step(steps, nsteps, cap, CONF_START, 0, &new->targets[i]))
				return -ENOMEM;
	return 0;
}

int conf_plan(const struct conf *old, struct conf *new, const struct conf_seen *seen,
	      size_t nseen, struct conf_step **steps, size_t *nsteps)
{
	bool *start = calloc(new->ntargets + 1, sizeof(*start));
	size_t cap = 0;
	struct conf_step *s;
	int r = -ENOMEM;

	*steps = NULL;
	*nsteps = 0;
	if (!start)
		return -ENOMEM;
	/* stops first: a removed section's target stops, and is kept with its results */
	for (size_t i = 0; old && i < old->ntargets; i++) {
		const struct conf_target *o = &old->targets[i];
		const struct conf_seen *have = ours(seen, nseen, o->id, o->name);

		if (conf_find(new, o->name) || !have || !have->live)
			continue;
		if (!(s = step(steps, nsteps, &cap, CONF_STOP, o->id, NULL)))
			goto out;
		s->why = "removed";
		snprintf(s->name, sizeof(s->name), "%s", o->name);
	}
	r = plan_sections(old, new, seen, nseen, start, steps, nsteps, &cap);
out:
	free(start);
	if (r) {
		free(*steps);
		*steps = NULL;
		*nsteps = 0;
	}
	return r;
}

/* ---- applying: requests to the engine, as root */

static cJSON *conf_ask(struct engine *e, cJSON *req)
{
	struct client root = { .uid = 0, .pid = getpid() };
	cJSON *rep;

	if (!req)
		return NULL;
	rep = engine_handle(e, &root, req);
	cJSON_Delete(req);
	return rep;
}

static cJSON *target_req(const char *cmd, uint32_t id)
{
	cJSON *req = proto_request(cmd);

	if (req && !cJSON_AddNumberToObject(req, "target", id)) {
		cJSON_Delete(req);
		return NULL;
	}
	return req;
}

/* The targets the engine has, as root sees them (names point into *rep). */
static int seen_targets(struct engine *e, cJSON **rep, struct conf_seen **seen, size_t *n)
{
	const cJSON *arr, *o;
	size_t cap = 0;

	*seen = NULL;
	*n = 0;
	*rep = conf_ask(e, proto_request("targets"));
	arr = cJSON_GetObjectItemCaseSensitive(*rep, "targets");
	if (!cJSON_IsArray(arr))
		return -EIO;
	cJSON_ArrayForEach(o, arr) {
		const char *state = proto_str(o, "state", "");

		if (GROW(*seen, cap, *n + 1))
			return -ENOMEM;
		(*seen)[(*n)++] = (struct conf_seen){
			.id = proto_num(o, "id", 0),
			.name = proto_str(o, "name", ""),
			.owner = proto_num(o, "owner", 0),
			.live = !strcmp(state, "running") || !strcmp(state, "paused"),
		};
	}
	return 0;
}

int conf_apply(struct engine *e, const struct conf *old, struct conf *new)
{
	struct conf_seen *seen = NULL;
	struct conf_step *steps = NULL;
	size_t nseen = 0, nsteps = 0;
	cJSON *list = NULL, *rep;
	int failed = 0;

	if (seen_targets(e, &list, &seen, &nseen) ||
	    conf_plan(old, new, seen, nseen, &steps, &nsteps)) {
		pr_err("%s: cannot apply: %s", new->path,
		       proto_str(list, "error", "out of memory"));
		free(seen);
		cJSON_Delete(list);
		return 1;
	}
	for (size_t i = 0; i < nsteps; i++) {
		struct conf_step *s = &steps[i];
		struct conf_target *t = s->t;
		const char *name = t ? t->name : "";
		cJSON *req;

		switch (s->op) {
		case CONF_KEEP:
			pr_info("%s:%d: [target %s]: unchanged: target %u kept as it is", new->path,
				t->line, name, s->id);
			continue;
		case CONF_BLOCKED:
			pr_warn("%s:%d: [target %s]: not started: root's target %u \"%s\" is running already (stop it, then reload)",
				new->path, t->line, name, s->id, name);
			continue;
		case CONF_STOP:
			rep = conf_ask(e, target_req("stop", s->id));
			break;
		case CONF_RENAME:
			req = target_req("rename", s->id);
			if (req && !cJSON_AddStringToObject(req, "name", s->name)) {
				cJSON_Delete(req);
				req = NULL;
			}
			rep = conf_ask(e, req);
			break;
		case CONF_START:
			rep = conf_ask(e, cJSON_Duplicate(t->req, true));
			break;
		default:
			continue;
		}
		if (!rep || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok"))) {
			failed++;
			if (s->op == CONF_START)
				pr_err("%s:%d: [target %s]: not started: %s", new->path, t->line, name,
				       proto_str(rep, "error", "out of memory"));
			else
				pr_err("%s: target %u: cannot %s it: %s", new->path, s->id,
				       s->op == CONF_STOP ? "stop" : "rename",
				       proto_str(rep, "error", "out of memory"));
		} else if (s->op == CONF_START) {
			t->id = proto_num(rep, "id", 0);
			pr_info("%s:%d: [target %s]: started target %u", new->path, t->line, name, t->id);
		} else if (s->op == CONF_STOP) {
			pr_info("%s: [target %s] %s: target %u stopped, its results kept", new->path,
				s->name, s->why, s->id);
		} else {
			pr_info("%s: target %u \"%s\", stopped, is now \"%s\": [target %s] starts a new one",
				new->path, s->id, name, s->name, name);
		}
		cJSON_Delete(rep);
	}
	free(steps);
	free(seen);
	cJSON_Delete(list);
	return failed;
}

void conf_daemon_changes(const struct conf *old, const struct conf *new,
			 const struct conf_daemon *cmdline)
{
	for (int i = 0; i < CONF_NSETTINGS; i++) {
		const struct conf_value *a = &old->d.v[i], *b = &new->d.v[i];

		if (cmdline->v[i].set || (a->set == b->set && (!a->set || (a->num == b->num &&
		    !strcmp(a->str ? a->str : "", b->str ? b->str : "")))))
			continue;
		pr_warn("%s:%d: [daemon] %s: changed; pcmond takes it at its next start (systemctl restart pcmond)",
			new->path, b->set ? b->line : a->line, conf_settings[i].name);
	}
}
