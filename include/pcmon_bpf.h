/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Every struct BPF shares with the engine: the process-lifecycle side (pcmon_procs.h) and
 * each instrument's (pcmon_sample.h). One header per .bpf.c; this one is for code that
 * uses them all.
 */
#ifndef PCMON_BPF_H
#define PCMON_BPF_H

#include "pcmon_procs.h"
#include "pcmon_sample.h"

#endif /* PCMON_BPF_H */
