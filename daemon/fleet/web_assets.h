/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * web_asset_: pcmond's page (daemon/fleet/web: index.html, app.js, app.css), built into the
 * binary by web/embed.sh: served with no file to read and nothing fetched from elsewhere.
 */
#ifndef PCMON_WEB_ASSETS_H
#define PCMON_WEB_ASSETS_H

#include <stddef.h>

struct web_asset {
	const char *path;	/* on the server: "/" for index.html, "/app.js" */
	const char *type;	/* its Content-Type */
	const unsigned char *data;
	size_t len;
};

/* The file served at @path, or NULL. */
const struct web_asset *web_asset(const char *path);

#endif
