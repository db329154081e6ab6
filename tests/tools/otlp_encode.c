// SPDX-License-Identifier: GPL-2.0-only
/*
 * For tests/integration/test_otlp.py: `pcmon export --format json`'s output (a list reply
 * with its profile) read from FILE, encoded by otlp_encode() and written to stdout, the
 * body pcmond would push. Window and host as given, else the profile's and this host's.
 *
 *	otlp_encode FILE [HOST START_NS DURATION_NS]
 */
#include <stdio.h>
#include <stdlib.h>

#include "otlp.h"
#include "util.h"

int main(int argc, char **argv)
{
	struct otlp_meta m = { 0 };
	char err[256] = "";
	struct xprof p;
	uint8_t *body;
	size_t len;
	cJSON *rep;
	char *text;

	if (argc != 2 && argc != 5) {
		fprintf(stderr, "usage: otlp_encode FILE [HOST START_NS DURATION_NS]\n");
		return 2;
	}
	if (argc == 5) {
		m.host_name = argv[2];
		m.start_unix_nano = strtoull(argv[3], NULL, 10);
		m.duration_nano = strtoull(argv[4], NULL, 10);
	}
	/* (a test's profile may be larger than what one push carries) */
	m.max_bytes = 1u << 30;
	if (!(text = read_file(argv[1], NULL)) || !(rep = cJSON_Parse(text))) {
		fprintf(stderr, "otlp_encode: cannot read %s\n", argv[1]);
		return 1;
	}
	free(text);
	if (xprof_load(&p, rep, err, sizeof(err)) ||
	    otlp_encode(&p, &m, &body, &len, err, sizeof(err))) {
		fprintf(stderr, "otlp_encode: %s\n", err);
		return 1;
	}
	if (fwrite(body, 1, len, stdout) != len || fflush(stdout)) {
		fprintf(stderr, "otlp_encode: cannot write\n");
		return 1;
	}
	free(body);
	xprof_free(&p);
	cJSON_Delete(rep);
	return 0;
}
