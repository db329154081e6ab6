/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * OTLP profiles (docs/exports.md, "OTLP profiles"): the exports' profile (daemon/views/
 * export.h) as the protobuf body of an OTLP/HTTP `POST /v1development/profiles`, an
 * ExportProfilesServiceRequest of opentelemetry-proto v1.11.0 (the .proto files here).
 * pcmond's alone: the CLI does not link protobuf-c.
 */
#ifndef PCMON_OTLP_H
#define PCMON_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"

/* What servers accept by default (OTLP's specification: gRPC's usual 4 MiB). */
#define OTLP_MAX_BYTES_DEFAULT (4u << 20)

/* What the profile does not say itself: where it comes from and the window it covers. */
struct otlp_meta {
	const char *host_name;		/* host.name; NULL: this machine's (gethostname) */
	const char *service_name;	/* service.name; NULL: the target's name */
	uint64_t start_unix_nano;	/* the window: its start (0: the profile's own start) */
	uint64_t duration_nano;		/* and its length (0 with start 0: the profile's) */
	size_t max_bytes;		/* a larger body is refused; 0: OTLP_MAX_BYTES_DEFAULT */
};

/*
 * Profile @p as one ExportProfilesServiceRequest into *@out (malloc'ed, *@len bytes; the
 * caller frees it): one resource (host, target), scope "pcmon", two profiles over the same
 * samples (sample counts; CPU or, with REAL, wall nanoseconds), everything shared in the
 * request's dictionary. 0, or -errno with the reason in @err (-E2BIG: over max_bytes;
 * push a shorter window).
 */
int otlp_encode(const struct xprof *p, const struct otlp_meta *m, uint8_t **out, size_t *len,
		char *err, size_t errlen);

#endif
