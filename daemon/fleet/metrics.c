// SPDX-License-Identifier: GPL-2.0-only
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "util.h"

struct mw {
	FILE *f;
	const char *family;	/* the one whose HELP and TYPE were written last */
};

/* A family's HELP and TYPE, once, before its first sample. */
static void family(struct mw *w, const char *name, const char *type, const char *help)
{
	if (w->family && !strcmp(w->family, name))
		return;
	w->family = name;
	fprintf(w->f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value, escaped as the format says: backslash, double quote, newline. */
static void label_value(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

/*
 * One sample: @labels is "k1", v1, "k2", v2, ..., NULL (values are strings); a value of
 * NAN-free doubles printed as Prometheus reads them (%.17g keeps counters exact to 2^53).
 */
static void sample(struct mw *w, const char *name, double v, ...)
{
	const char *k;
	va_list ap;
	int n = 0;

	fputs(name, w->f);
	va_start(ap, v);
	while ((k = va_arg(ap, const char *))) {
		fprintf(w->f, "%s%s=\"", n++ ? "," : "{", k);
		label_value(w->f, va_arg(ap, const char *));
		fputc('"', w->f);
	}
	va_end(ap);
	fprintf(w->f, "%s %.17g\n", n ? "}" : "", v);
}

static double num(const cJSON *o, const char *path)
{
	char key[64];
	const char *dot;

	/* "a.b": one level down */
	while (o && (dot = strchr(path, '.'))) {
		snprintf(key, sizeof(key), "%.*s", (int)(dot - path), path);
		o = cJSON_GetObjectItemCaseSensitive(o, key);
		path = dot + 1;
	}
	o = o ? cJSON_GetObjectItemCaseSensitive(o, path) : NULL;
	return cJSON_IsNumber(o) ? o->valuedouble : cJSON_IsBool(o) ? cJSON_IsTrue(o) : 0;
}

/* A figure of status: a counter or a gauge, its unit turned to the base one by @scale. */
struct status_metric {
	const char *name, *type, *path, *help;
	double scale;
};

static const struct status_metric status_metrics[] = {
	{ "pcmon_uptime_seconds", "gauge", "uptime_s", "Seconds since pcmond started.", 1 },
	{ "pcmon_events_lost_total", "counter", "events_lost",
	  "Process lifecycle events lost: their ring was full.", 1 },
	{ "pcmon_procs_full_total", "counter", "procs_full",
	  "Processes that could not join their target: the process map was full.", 1 },
	{ "pcmon_drains_total", "counter", "drains", "Drains of what BPF counted.", 1 },
	{ "pcmon_drain_seconds_total", "counter", "drain_ms_total", "Time spent draining.", 1e-3 },
	{ "pcmon_drain_seconds_max", "gauge", "drain_ms_max", "The longest drain.", 1e-3 },
	{ "pcmon_drains_behind_total", "counter", "drains_late",
	  "Drains that found a counts map half full (pcmond fell behind).", 1 },
	{ "pcmon_drain_capacity_entries", "gauge", "drain_capacity",
	  "Entries BPF holds between two drains.", 1 },
	{ "pcmon_dwarf_samples_unwound_total", "counter", "dwarf_samples_unwound",
	  "Samples whose copied user stack pcmond unwound with CFI.", 1 },
	{ "pcmon_dwarf_unwind_seconds_total", "counter", "dwarf_unwind_ms_total",
	  "Time spent unwinding copied stacks.", 1e-3 },
	{ "pcmon_probe_events_total", "counter", "probe_events",
	  "Exec and dlopen events that brought files to look into for critical-section probes.", 1 },
	{ "pcmon_symbol_locations", "gauge", "symbols.locations", "Code addresses symbolized.", 1 },
	{ "pcmon_symbol_procedures", "gauge", "symbols.procedures", "Distinct procedures named.", 1 },
	{ "pcmon_objects_open", "gauge", "symbols.objects_open",
	  "Object files open for symbols and unwinding.", 1 },
	{ "pcmon_objects_closed_total", "counter", "symbols.objects_closed",
	  "Object files let go when idle.", 1 },
	{ "pcmon_maps_reads_total", "counter", "symbols.maps_reads",
	  "Reads of a process's address map.", 1 },
	{ "pcmon_debuginfod_pending", "gauge", "debuginfod.pending",
	  "Debug info fetches queued or under way.", 1 },
	{ "pcmon_debuginfod_fetched_total", "counter", "debuginfod.fetched",
	  "Debug info files fetched from debuginfod servers.", 1 },
	{ "pcmon_debuginfod_failed_total", "counter", "debuginfod.failed",
	  "Debug info fetches that failed.", 1 },
	{ "pcmon_connections", "gauge", "connections.clients", "Clients on the Unix socket.", 1 },
	{ "pcmon_connections_refused_total", "counter", "connections.refused",
	  "Socket connections refused by a limit.", 1 },
	{ "pcmon_saves_total", "counter", "store.saves", "Results files written.", 1 },
	{ "pcmon_save_errors_total", "counter", "store.save_failures",
	  "Results files that could not be written.", 1 },
	{ "pcmon_unsaved_targets", "gauge", "store.unsaved_targets",
	  "Targets whose latest results are not on disk.", 1 },
};

/* --push, --otlp (push.c), when configured */
static const struct status_metric push_metrics[] = {
	{ "pcmon_push_windows_total", "counter", "push.windows", "Windows cut and queued to push.", 1 },
	{ "pcmon_push_sent_total", "counter", "push.sent", "Pushes a receiver accepted.", 1 },
	{ "pcmon_push_retries_total", "counter", "push.retries", "Pushes tried again.", 1 },
	{ "pcmon_push_failed_total", "counter", "push.failed",
	  "Windows dropped after every try failed.", 1 },
	{ "pcmon_push_dropped_total", "counter", "push.dropped",
	  "Windows dropped: the queue was full.", 1 },
	{ "pcmon_push_too_large_total", "counter", "push.too_large",
	  "Windows not sent: over the receiver's size limit.", 1 },
	{ "pcmon_push_gaps_total", "counter", "push.gaps",
	  "Windows of a target that could not start or went: samples not sent.", 1 },
	{ "pcmon_push_queued", "gauge", "push.queued", "Windows waiting to be sent.", 1 },
};

static const char *const target_states[] = { "running", "paused", "exited", "stopped" };

static const char *str(const cJSON *o, const char *k)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));

	return s ? s : "";
}

static void targets_metrics(struct mw *w, const cJSON *targets)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(targets, "targets"), *t, *r;
	char id[16];

	for (size_t i = 0; i < ARRAY_SIZE(target_states); i++) {
		int n = 0;

		cJSON_ArrayForEach(t, arr)
			n += !strcmp(str(t, "state"), target_states[i]);
		family(w, "pcmon_targets", "gauge", "Targets, by state.");
		sample(w, "pcmon_targets", n, "state", target_states[i], NULL);
	}
	/* a target's own figures, its name included, for the published ones alone */
#define EACH_TARGET(stmt)                                                                   \
	cJSON_ArrayForEach(t, arr) {                                                         \
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "published")))        \
			continue;                                                            \
		snprintf(id, sizeof(id), "%d", (int)num(t, "id"));                           \
		stmt;                                                                        \
	}
	family(w, "pcmon_samples_total", "counter", "Samples a target counted.");
	EACH_TARGET(sample(w, "pcmon_samples_total", num(t, "samples"), "target", id, "name",
			   str(t, "name"), NULL));
	family(w, "pcmon_samples_lost_total", "counter", "Samples a target lost, by reason.");
	EACH_TARGET(cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(t, "lost_by_reason"))
			    sample(w, "pcmon_samples_lost_total", r->valuedouble, "target", id, "name",
				   str(t, "name"), "reason", r->string, NULL));
	family(w, "pcmon_samples_unwalkable_total", "counter",
	       "Samples whose stack could not be walked, by reason.");
	EACH_TARGET(cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(t, "unwalkable_by_reason"))
			    sample(w, "pcmon_samples_unwalkable_total", r->valuedouble, "target", id,
				   "name", str(t, "name"), "reason", r->string, NULL));
	family(w, "pcmon_samples_cut_short_total", "counter",
	       "Samples whose stack stops short of a root (its frames kept), by reason.");
	EACH_TARGET(cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(t, "cut_short_by_reason"))
			    sample(w, "pcmon_samples_cut_short_total", r->valuedouble, "target", id,
				   "name", str(t, "name"), "reason", r->string, NULL));
	family(w, "pcmon_target_memory_bytes", "gauge", "Memory a target's results hold.");
	EACH_TARGET(sample(w, "pcmon_target_memory_bytes", num(t, "memory_bytes"), "target", id,
			   "name", str(t, "name"), NULL));
#undef EACH_TARGET
}

/* A table of status's figures, one family each. */
static void status_table(struct mw *w, const cJSON *status, const struct status_metric *t,
			 size_t n)
{
	for (size_t i = 0; i < n; i++) {
		family(w, t[i].name, t[i].type, t[i].help);
		sample(w, t[i].name, num(status, t[i].path) * t[i].scale, NULL);
	}
}

char *metrics_text(const cJSON *status, const cJSON *targets, const struct metrics_extra *x)
{
	struct mw w = { 0 };
	char *buf = NULL;
	size_t len;

	w.f = open_memstream(&buf, &len);
	if (!w.f)
		return NULL;
	family(&w, "pcmon_build_info", "gauge", "pcmond's version.");
	sample(&w, "pcmon_build_info", 1, "version", str(status, "version"), NULL);
	family(&w, "pcmon_resident_memory_bytes", "gauge", "pcmond's resident memory.");
	sample(&w, "pcmon_resident_memory_bytes", x->rss_bytes, NULL);
	status_table(&w, status, status_metrics, ARRAY_SIZE(status_metrics));
	targets_metrics(&w, targets);
	if (cJSON_GetObjectItemCaseSensitive(status, "push"))
		status_table(&w, status, push_metrics, ARRAY_SIZE(push_metrics));
	family(&w, "pcmon_http_requests_total", "counter", "HTTP requests answered, by outcome.");
	sample(&w, "pcmon_http_requests_total", x->http_requests, "outcome", "served", NULL);
	sample(&w, "pcmon_http_requests_total", x->http_refused, "outcome", "refused", NULL);
	sample(&w, "pcmon_http_requests_total", x->http_unauthorized, "outcome", "unauthorized",
	       NULL);
	family(&w, "pcmon_http_windows_open", "gauge", "Profile scrapes under way.");
	sample(&w, "pcmon_http_windows_open", x->windows_open, NULL);
	if (fclose(w.f)) {
		free(buf);
		return NULL;
	}
	return buf;
}
