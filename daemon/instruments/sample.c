// SPDX-License-Identifier: GPL-2.0-only
/* The sampling instrument's base, which every part of it uses (sample.h). */
#include "sample.h"

const char *const sample_unwind_names[3] = { "fp", "dwarf", "auto" };
