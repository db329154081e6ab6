// SPDX-License-Identifier: GPL-2.0-only
/*
 * The floor for a command that asks pcmond something: a program that only connects to the
 * socket, sends one request and reads the reply, with nothing but libc. The benchmark times
 * it beside `pcmon` under load: whatever separates the two is pcmon's own start-up and
 * formatting, and whatever separates this from /bin/true is the wait for pcmond's answer
 * (and, on a loaded machine, for a CPU after it).
 *
 *   ask SOCKET CMD TARGET    exit 0 if the reply says "ok":true
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char req[256], rep[4096];
	size_t got = 0;
	ssize_t n;
	int fd, len;

	if (argc != 4 || strlen(argv[1]) >= sizeof(a.sun_path)) {
		fprintf(stderr, "usage: ask SOCKET CMD TARGET\n");
		return 2;
	}
	strcpy(a.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("ask: connect");
		return 1;
	}
	len = snprintf(req, sizeof(req), "{\"v\":1,\"cmd\":\"%s\",\"target\":\"%s\"}\n", argv[2],
		       argv[3]);
	if (len >= (int)sizeof(req) || write(fd, req, len) != len) {
		perror("ask: write");
		return 1;
	}
	/* one line; only its start is kept, which holds "ok" */
	while ((n = read(fd, rep + got, sizeof(rep) - 1 - got)) > 0) {
		char *nl = memchr(rep + got, '\n', n);

		got += n;
		if (nl)
			break;
		if (got == sizeof(rep) - 1)
			got = 64; /* keep the start, drop the rest */
	}
	rep[got] = '\0';
	return strstr(rep, "\"ok\":true") ? 0 : 1;
}
