// SPDX-License-Identifier: GPL-2.0-only
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

bool dm_is_mangled(const char *name)
{
	return name && name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
}

char *dm_demangle(const char *name)
{
	/* DMGL_AUTO: the Itanium C++ ABI, and Rust's legacy (hash dropped) and v0 schemes */
	return dm_is_mangled(name) ? cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO) :
				     NULL;
}

static bool ends_with(const char *s, size_t len, const char *tail)
{
	size_t n = strlen(tail);

	return len >= n && !memcmp(s + len - n, tail, n);
}

bool dm_base(const char *name, char *out, size_t cap)
{
	static const char *const quals[] = { " const", " volatile", " &&", " &", "&&", "&" };
	size_t len = strlen(name), start = 0, nsuf = 0, i;
	char suffix[128];
	int depth;

	if (cap <= len)
		return false;
	/* clones: "f(int) [clone .isra.0] [clone .cold]" keep ".isra.0.cold", as C's f.isra.0.cold */
	while (ends_with(name, len, "]")) {
		const char *c = NULL;

		for (i = len; i-- > 0;)
			if (!strncmp(name + i, " [clone ", 8)) {
				c = name + i;
				break;
			}
		if (!c)
			break;
		size_t n = len - 1 - (size_t)(c + 8 - name);

		if (nsuf + n >= sizeof(suffix))
			return false;
		memmove(suffix + n, suffix, nsuf);
		memcpy(suffix, c + 8, n);
		nsuf += n;
		len = (size_t)(c - name);
	}
	for (bool more = true; more;) {
		more = false;
		for (i = 0; i < sizeof(quals) / sizeof(quals[0]); i++)
			if (ends_with(name, len, quals[i])) {
				len -= strlen(quals[i]);
				more = true;
			}
	}
	/* the parameter list: the parenthesis that closes at the end, back to its opening */
	if (len && name[len - 1] == ')') {
		depth = 0;
		for (i = len; i-- > 0;) {
			depth += name[i] == ')' ? 1 : name[i] == '(' ? -1 : 0;
			if (!depth)
				break;
		}
		if (depth || !i)
			return false; /* not a parameter list after a name: leave it whole */
		len = i;
	}
	/* a template function's return type ("void ns::f<int>"): up to the last blank outside
	 * brackets, before any operator name ("ns::operator new", "operator<<") */
	depth = 0;
	for (i = 0; i < len; i++) {
		char c = name[i];

		if (!depth && !strncmp(name + i, "operator", 8) &&
		    (i == 0 || name[i - 1] == ':' || name[i - 1] == ' '))
			break;
		if (c == '<' || c == '(' || c == '[' || c == '{')
			depth++;
		else if ((c == '>' || c == ')' || c == ']' || c == '}') && depth)
			depth--;
		else if (c == ' ' && !depth)
			start = i + 1;
	}
	if (start >= len)
		start = 0;
	len -= start;
	if (len + nsuf + 1 > cap)
		return false;
	memmove(out, name + start, len);
	memcpy(out + len, suffix, nsuf);
	out[len + nsuf] = '\0';
	return strcmp(out, name) != 0;
}
