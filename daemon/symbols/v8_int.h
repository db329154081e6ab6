/* SPDX-License-Identifier: GPL-2.0-only */
/* What v8.c lends v8_names.c. */
#ifndef PCMON_V8_INT_H
#define PCMON_V8_INT_H

#include "v8.h"

/* The layout of the V8 in the ELF object open at @fd (v8_layout()'s returns). */
int v8_layout_of_file(int fd, struct v8_layout *l, char *why, size_t wlen);

#endif
