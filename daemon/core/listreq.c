// SPDX-License-Identifier: GPL-2.0-only
/*
 * A list request, read once (listreq.h). The fields were checked against what the
 * instruments take (proto_check()) before: a wrong type was refused, so what is absent or
 * not of its type here is unset.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "listreq.h"
#include "proto.h"

/* A tri-state flag: 0, 1, or -1 where the request does not say. */
static int flag(const cJSON *req, const char *name)
{
	return proto_bool(req, name, -1);
}

int list_req_parse(const cJSON *req, struct list_req *lr)
{
	*lr = (struct list_req){
		.when = proto_str(req, "when", NULL),
		.when_from_file = proto_bool(req, "when_from_file", 0),
		.icase = flag(req, "icase"),
		.no_inline = flag(req, "no_inline"),
		.no_kernel = proto_bool(req, "no_kernel", 0),
		.since = proto_str(req, "since", NULL),
		.until = proto_str(req, "until", NULL),
		.stacks = proto_bool(req, "stacks", 0),
		.labels = proto_bool(req, "labels", 0),
		.timeline = proto_bool(req, "timeline", 0),
		.timeline_top = (uint32_t)proto_num(req, "timeline_top", 5),
		.by = proto_str(req, "by", NULL),
		.lines = proto_str(req, "lines", NULL),
		.offset = proto_str(req, "offset", NULL),
		.scale = (uint32_t)proto_num(req, "scale", 0x10000),
		.bufsiz = (uint32_t)proto_num(req, "bufsiz", 0),
		.since_mark = (uint32_t)proto_num(req, "since_mark", 0),
		.drop_mark = proto_bool(req, "drop_mark", 0),
		.remark = proto_bool(req, "remark", 0),
		.calls = proto_bool(req, "calls", 0),
		.alloc = proto_bool(req, "alloc", 0),
		.tables = proto_bool(req, "tables", 0),
		.sort = proto_str(req, "sort", "self"),
		.tail = (uint32_t)proto_num(req, "tail", 0),
		.tail_part = proto_str(req, "tail_part", "tail"),
	};
	if (proto_strs(req, "critical", &lr->critical, &lr->ncritical) ||
	    proto_strs(req, "timeline_procs", &lr->timeline_procs, &lr->ntimeline_procs)) {
		list_req_free(lr);
		return -ENOMEM;
	}
	return 0;
}

void list_req_free(struct list_req *lr)
{
	free(lr->critical);
	free(lr->timeline_procs);
	lr->critical = lr->timeline_procs = NULL;
	lr->ncritical = lr->ntimeline_procs = 0;
}
