/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm_: the names people read. C++ (Itanium ABI) and Rust (legacy and v0) symbols are
 * demangled with libiberty's cplus_demangle(), the demangler binutils, GDB and perf use;
 * pcmon writes none of its own.
 */
#ifndef PCMON_DEMANGLE_H
#define PCMON_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

/* Does @name look like a C++ or Rust symbol ("_Z...", "_R...")? */
bool dm_is_mangled(const char *name);

/*
 * The demangled form of @name, with its parameters as perf prints it
 * ("bitmap_set_bit(bitmap_head*, int)", "core::fmt::write", "foo(int) [clone .cold]"), in
 * memory the caller frees; NULL if @name is not a mangled symbol (or memory ran out).
 */
char *dm_demangle(const char *name);

/*
 * The name a user writes for the procedure called @name (a demangled name): without the
 * parameter list, its qualifiers and a template function's return type, with the compiler's
 * clone suffixes kept in the form C names carry them ("ns::cls<int>::m.cold" for "void
 * ns::cls<int>::m(int) const [clone .cold]"). Written to @out (@cap bytes, at least
 * strlen(@name) + 1); false if it is @name itself.
 */
bool dm_base(const char *name, char *out, size_t cap);

#endif
