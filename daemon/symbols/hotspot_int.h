/* SPDX-License-Identifier: GPL-2.0-only */
/* What hotspot.c, hotspot_unwind.c and hotspot_names.c share (hotspot.h has the API). */
#ifndef PCMON_HOTSPOT_INT_H
#define PCMON_HOTSPOT_INT_H

#include "hotspot.h"
#include "util.h"

#define HS_MAX_HEAPS 4
#define HS_SEEN_MAX  1024

/* What a code blob is, as the walk needs it. */
enum hs_kind {
	HS_BLOB_NMETHOD, /* compiled Java code: a frame of frame_size words */
	HS_BLOB_INTERP,	 /* the interpreter: frames on the frame pointer */
	HS_BLOB_FRAMED,	 /* a stub with a frame of its own size (RuntimeStub, ...) */
	HS_BLOB_STUB,	 /* a stub without (StubRoutines, adapters): frame pointer */
};

/* A code blob as read from the process (hotspot_unwind.c). */
struct hs_blob {
	uint64_t addr, code_begin, code_end, name_ptr, pc; /* pc: the one it was read for */
	uint64_t method;				   /* nmethods */
	uint64_t deopt;	    /* nmethods: where their deoptimization handler starts (0: not known) */
	int32_t orig_pc;    /* ... and where in a frame the pc it had is kept (HS_NONE: not) */
	int32_t frame_size; /* words */
	int32_t frame_complete; /* bytes from code_begin */
	int32_t compile_id;
	enum hs_kind kind;
	bool native; /* a native method's wrapper (no debug info but its method) */
	char name[48];
};

struct hs_heap {
	uint64_t lo, hi, segmap;
	uint32_t log2seg;
};

struct hs_proc {
	uint32_t pid, epoch;
	bool jvm, told, marked;
	bool libjvm;	  /* it maps libjvm.so (its tables may not be filled in yet) */
	bool launcher;	  /* it maps the java launcher (a libjvm on its way) */
	uint64_t gone_at; /* when it exited (0: it runs) */
	uint32_t looks;
	uint64_t last_look;
	struct hs_layout l;
	uint64_t cc_lo, cc_hi; /* the code cache, once the JVM made it */
	struct hs_heap heaps[HS_MAX_HEAPS];
	uint32_t nheaps;
	uint64_t heaps_read; /* when they were last read */
	uint64_t interp_lo, interp_hi;
	/*
	 * The blobs read, by pc (direct-mapped, HS_SEEN_MAX): found again with one read of
	 * their header (checked to be the same blob), and what a process's last records are
	 * walked with after it is gone.
	 */
	struct hs_blob *seen;
	/* the name string addresses of blobs seen, by kind (0: not seen yet) */
	uint64_t nm_name, native_name, interp_name;
};

struct hs {
	struct sym *sym;
	struct pidtab *procs;	/* struct hs_proc by pid: every process looked at */
	struct hs_names *names; /* hotspot_names.c's caches */
	struct hs_stats st;
};

struct hs_proc *hs_proc_of(struct hs *h, uint32_t pid);
/* The code cache's heaps read (again) from the process: 0 or -errno. */
int hs_heaps_read(struct hs_proc *p);

/* hotspot_unwind.c: the blob around @pc, read now: 0, -ENOENT (none: free, or not code). */
int hs_blob_of(struct hs_proc *p, uint64_t pc, struct hs_blob *b);

/* hotspot_names.c */
struct hs_names *hs_names_new(void);
void hs_names_free(struct hs_names *n);
void hs_names_forget(struct hs_names *n, uint32_t pid);
void hs_names_trim(struct hs_names *n);
/* The location of an interpreted frame running @method at @bcp: 0, or -errno. */
int hs_interp_loc(struct hs *h, struct hs_proc *p, uint64_t method, uint64_t bcp, uint32_t *loc);
/* The location of compiled frame @b at @pc (@exact: a return address, its PcDesc exact). */
int hs_compiled_loc(struct hs *h, struct hs_proc *p, const struct hs_blob *b, uint64_t pc,
		    bool exact, uint32_t *loc);
/* The location of a stub. */
int hs_stub_loc(struct hs *h, struct hs_proc *p, const struct hs_blob *b, uint32_t *loc);
/* Does @method look like a Method of the process (its ConstMethod points back)? */
bool hs_method_ok(struct hs_proc *p, uint64_t method);

#endif
