// SPDX-License-Identifier: GPL-2.0-only
/*
 * WHEN call patterns: the lexer and the recursive-descent parser, a pattern's text into a
 * syntax tree; parse_all() drives expansion and building (pat_expand.c) from it.
 */
#include "demangle.h"
#include "pat_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Characters */

static bool is_alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Characters that may start an unquoted name (and follow a "::" inside one). */
static bool is_name_start(unsigned char c)
{
	return is_alnum(c) || c == '_' || c == '$' || c == '@' || c == '~' || c == '*' ||
	       c == '?' || c == '.' || c >= 0x80;
}

/* ---------------------------------------------------------------------------------------- */
/* Lexer */

/* A piece of the text for a message: at most 40 bytes, or 36 cut at a character and "...". */
static const char *excerpt(char *buf, size_t size, const char *s, size_t len)
{
	const char *more = "";

	if (len > 40) {
		len = 36;
		while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;
		more = "...";
	}
	snprintf(buf, size, "%.*s%s", (int)len, s, more);
	return buf;
}

static int lex_quoted(struct parser *ps, size_t start, struct tok *t, bool report)
{
	static const char escapes[] = "(only \\\" and \\\\ are allowed)";
	const char *s = ps->text;
	size_t i = start + 1;

	for (;;) {
		if (i >= ps->len || s[i] == '\n' || s[i] == '\r')
			return report ? parse_fail(ps, start, "unterminated quote") : -EINVAL;
		if (s[i] == '"')
			break;
		if (s[i] == '\\') {
			if (i + 1 >= ps->len) {
				i++; /* reported as unterminated above */
				continue;
			}
			if (s[i + 1] != '"' && s[i + 1] != '\\') {
				if (!report)
					return -EINVAL;
				if ((unsigned char)s[i + 1] > 0x20 &&
				    (unsigned char)s[i + 1] < 0x7f)
					return parse_fail(ps, i,
							  "unknown escape '\\%c' in quoted name %s",
							  s[i + 1], escapes);
				return parse_fail(ps, i, "unknown escape in quoted name %s", escapes);
			}
			i += 2;
			continue;
		}
		i++;
	}
	if (i == start + 1)
		return report ? parse_fail(ps, start, "empty quoted name") : -EINVAL;
	t->kind = T_NAME;
	t->quoted = true;
	t->end = i + 1;
	return 0;
}

static int lex_name(struct parser *ps, size_t start, struct tok *t, bool report)
{
	const char *s = ps->text;
	size_t i = start, k, angle = 0, open_at = 0;
	bool stars_only = true;

	while (i < ps->len) {
		unsigned char c = (unsigned char)s[i];
		unsigned char c1 = i + 1 < ps->len ? (unsigned char)s[i + 1] : 0;

		if (is_name_start(c) || c == '+' || (c == '-' && c1 != '>')) {
			i++;
		} else if (c == '<' || (c == '>' && angle) || (angle && (c == ',' || c == ' '))) {
			/* C++ template arguments: "geo::Grid<int>::sum", "std::map<int, int>::at" */
			if (c == '<' && !angle++)
				open_at = i;
			angle -= c == '>';
			i++;
		} else if (c == ':' && c1 == ':' && i + 2 < ps->len &&
			   is_name_start((unsigned char)s[i + 2]) && s[i + 2] != '.') {
			i += 2;
			stars_only = false;
			continue;
		} else {
			break;
		}
		if (c != '*')
			stars_only = false;
	}
	t->end = i;
	t->quoted = false;
	if (angle)
		return report ? parse_fail(ps, open_at, "'<' not closed in a name (quote the name)") :
				-EINVAL;
	if (stars_only) {
		t->kind = T_STAR;
		return 0;
	}
	t->kind = T_NAME;
	if (s[start] == '.')
		return report ? parse_fail(ps, start, "a name cannot start with '.'") : -EINVAL;
	if (s[i - 1] == '.' && !report)
		return -EINVAL;
	if (s[i - 1] == '.' && i < ps->len && s[i] == '"')
		return parse_fail(ps, i - 1, "a name cannot end with '.' (quote the whole name)");
	if (s[i - 1] == '.')
		return parse_fail(ps, i - 1, "a name cannot end with '.'");
	for (k = start; k + 1 < i; k++)
		if (s[k] == '.' && s[k + 1] == '.')
			return report ? parse_fail(ps, k, "a name cannot contain '..'") : -EINVAL;
	return 0;
}

/* Lex one token at byte offset @pos.  With !@report, errors are returned but not recorded. */
static int lex_at(struct parser *ps, size_t pos, struct tok *t, bool report)
{
	const char *s = ps->text;
	unsigned char c;

	while (pos < ps->len && is_space((unsigned char)s[pos]))
		pos++;
	t->pos = pos;
	t->end = pos + 1;
	t->quoted = false;
	if (pos >= ps->len) {
		t->kind = T_END;
		t->end = pos;
		return 0;
	}
	c = (unsigned char)s[pos];
	switch (c) {
	case '(':
		t->kind = T_LPAREN;
		return 0;
	case ')':
		t->kind = T_RPAREN;
		return 0;
	case '|':
		t->kind = T_BAR;
		return 0;
	case ';':
		t->kind = T_SEMI;
		return 0;
	case ':':
		t->kind = T_COLON;
		return 0;
	case '"':
		return lex_quoted(ps, pos, t, report);
	case '-':
		if (pos + 1 < ps->len && s[pos + 1] == '>') {
			t->kind = T_ARROW;
			t->end = pos + 2;
			return 0;
		}
		return report ? parse_fail(ps, pos, "unexpected '-' (did you mean '->'?)") : -EINVAL;
	case '>':
		return report ? parse_fail(ps, pos, "unexpected '>' (did you mean '->'?)") : -EINVAL;
	case '\'':
		return report ? parse_fail(ps, pos, "names are quoted with '\"', not with '''") : -EINVAL;
	default:
		break;
	}
	if (is_name_start(c))
		return lex_name(ps, pos, t, report);
	if (!report)
		return -EINVAL;
	if (c > 0x20 && c < 0x7f)
		return parse_fail(ps, pos, "unexpected character '%c'", c);
	return parse_fail(ps, pos, "unexpected character '\\x%02x'", c);
}

static int peek(struct parser *ps, struct tok *t)
{
	int err;

	if (!ps->have_tok) {
		err = lex_at(ps, ps->pos, &ps->tok, true);
		if (err)
			return err;
		ps->have_tok = true;
	}
	*t = ps->tok;
	return 0;
}

static void consume(struct parser *ps)
{
	ps->pos = ps->tok.end;
	ps->have_tok = false;
	if (ps->tok.kind != T_END)
		ps->last_end = ps->tok.end;
}

/* ---------------------------------------------------------------------------------------- */
/* Parser */

static int new_node(struct parser *ps, uint8_t kind, size_t pos, uint32_t *idx)
{
	struct node *nodes = pat_grow(ps->nodes, &ps->cap_nodes, ps->nnodes + 1, sizeof(*nodes));

	if (!nodes)
		return -ENOMEM;
	ps->nodes = nodes;
	nodes[ps->nnodes] = (struct node){
		.kind = kind,
		.pos = (uint32_t)pos,
		.name = NONE,
		.child = NONE,
		.last = NONE,
		.next = NONE,
	};
	*idx = (uint32_t)ps->nnodes++;
	return 0;
}

static void add_child(struct parser *ps, uint32_t parent, uint32_t child)
{
	struct node *p = &ps->nodes[parent];

	if (p->last == NONE)
		p->child = child;
	else
		ps->nodes[p->last].next = child;
	p->last = child;
}

/*
 * A mangled C++ or Rust name in a pattern ("_Z3fooi", "prog._Z3fooi") stands for the
 * procedure as listings name it: demangled here, once. NULL if @s holds no mangled name (or
 * memory ran out: it is then matched as written).
 */
static char *demangled(const char *s)
{
	char *d = NULL, *dp;

	if (dm_is_mangled(s))
		d = dm_demangle(s);
	for (const char *dot = strchr(s, '.'); !d && dot; dot = strchr(dot + 1, '.')) {
		if (!dm_is_mangled(dot + 1) || !(dp = dm_demangle(dot + 1)))
			continue;
		if (asprintf(&d, "%.*s.%s", (int)(dot - s), s, dp) < 0)
			d = NULL;
		free(dp);
		break;
	}
	if (d && strlen(d) > 65535) { /* names are at most 64 KiB (SPLIT_PLUS) */
		free(d);
		d = NULL;
	}
	return d;
}

/* Record the name of token @t and return a N_NAME node for it. */
static int new_name(struct parser *ps, const struct tok *t, uint32_t *idx)
{
	struct pat_name *names, *nm;
	const char *raw = ps->text + t->pos;
	size_t rlen = t->end - t->pos, len = 0;
	bool quoted;
	char *s, *d;
	int err;

	names = pat_grow(ps->names, &ps->cap_names, ps->nnames + 1, sizeof(*names));
	if (!names)
		return -ENOMEM;
	ps->names = names;
	s = malloc(rlen + 1);
	if (!s)
		return -ENOMEM;
	if (t->quoted) {
		for (size_t i = 1; i + 1 < rlen; i++) {
			if (raw[i] == '\\')
				i++;
			s[len++] = raw[i];
		}
	} else {
		memcpy(s, raw, rlen);
		len = rlen;
	}
	s[len] = '\0';
	quoted = t->quoted;
	if ((quoted || !strpbrk(s, "*?")) && (d = demangled(s))) {
		free(s);
		s = d;
		len = strlen(s);
		quoted = true; /* a demangled name is printed quoted: it parses back the same */
	}
	nm = &names[ps->nnames];
	*nm = (struct pat_name){
		.s = s,
		.len = (uint32_t)len,
		.quoted = quoted,
		.glob = !quoted && strpbrk(s, "*?"),
		.split0 = (uint32_t)ps->nsplits,
	};
	ps->nnames++;
	for (size_t d = 1; d + 1 < len; d++) {
		uint32_t *splits;

		if (s[d] != '.' && s[d] != '+')
			continue;
		splits = pat_grow(ps->splits, &ps->cap_splits, ps->nsplits + 1, sizeof(*splits));
		if (!splits)
			return -ENOMEM;
		ps->splits = splits;
		splits[ps->nsplits++] = (uint32_t)d | (s[d] == '+' ? SPLIT_PLUS : 0);
		nm->nsplit++;
	}
	err = new_node(ps, N_NAME, t->pos, idx);
	if (!err)
		ps->nodes[*idx].name = (uint32_t)(ps->nnames - 1);
	return err;
}

static bool starts_primary(enum tok_kind k)
{
	return k == T_NAME || k == T_STAR || k == T_LPAREN || k == T_COLON;
}

enum ctx {
	CTX_START,
	CTX_LPAREN,
	CTX_BAR,
	CTX_ARROW
};

/* @t does not start a primary where one is needed after @ctx (the '(' at @lparen). */
static int no_primary(struct parser *ps, const struct tok *t, enum ctx ctx, size_t lparen)
{
	switch (t->kind) {
	case T_END:
	case T_SEMI:
		if (ctx == CTX_START)
			return parse_fail(ps, t->pos, "empty pattern");
		if (ctx == CTX_LPAREN)
			return parse_fail(ps, lparen, "unbalanced parenthesis: '(' is never closed");
		break;
	case T_RPAREN:
		if (ctx == CTX_START)
			return parse_fail(ps, t->pos,
					  "unbalanced parenthesis: ')' without a matching '('");
		if (ctx == CTX_LPAREN)
			return parse_fail(ps, t->pos, "empty parentheses");
		break;
	case T_BAR:
		if (ctx == CTX_START || ctx == CTX_LPAREN)
			return parse_fail(ps, t->pos, "empty alternative before '|'");
		if (ctx == CTX_BAR)
			return parse_fail(ps, t->pos,
					  "empty alternative between '|' and '|' (write a single '|')");
		break;
	case T_ARROW:
		if (ctx != CTX_ARROW)
			return parse_fail(ps, t->pos, "expected a name before '->'");
		break;
	default:
		break;
	}
	if (ctx == CTX_BAR)
		return parse_fail(ps, t->pos, "empty alternative after '|'");
	return parse_fail(ps, t->pos, "expected a name after '->'");
}

static int parse_alt(struct parser *ps, int depth, enum ctx ctx, size_t lparen, uint32_t *out);

static int parse_primary(struct parser *ps, int depth, uint32_t *out)
{
	struct tok t, u;
	size_t lp, cp;
	int err;

	err = peek(ps, &t);
	if (err)
		return err;
	switch (t.kind) {
	case T_LPAREN:
		if (depth >= PAT_MAX_DEPTH)
			return parse_fail(ps, t.pos, "parentheses nested more than %d deep",
					  PAT_MAX_DEPTH);
		lp = t.pos;
		consume(ps);
		err = parse_alt(ps, depth + 1, CTX_LPAREN, lp, out);
		if (err)
			return err;
		err = peek(ps, &t);
		if (err)
			return err;
		if (t.kind != T_RPAREN)
			return parse_fail(ps, lp, "unbalanced parenthesis: '(' is never closed");
		consume(ps);
		ps->nodes[*out].pos = (uint32_t)lp;
		err = peek(ps, &t);
		if (err)
			return err;
		if (t.kind == T_COLON)
			return parse_fail(ps, t.pos, "':' must be next to a name, not ')'");
		return 0;
	case T_STAR:
		consume(ps);
		err = peek(ps, &u);
		if (err)
			return err;
		if (u.kind == T_COLON)
			return parse_fail(ps, u.pos, "':' must be next to a name, not '*'");
		return new_node(ps, N_STAR, t.pos, out);
	case T_COLON:
		cp = t.pos;
		consume(ps);
		err = peek(ps, &t);
		if (err)
			return err;
		if (t.kind == T_COLON)
			return parse_fail(ps, t.pos,
					  "stray ':' (a name takes at most one ':' before it)");
		if (t.kind == T_STAR)
			return parse_fail(ps, cp, "':' must be next to a name, not '*'");
		if (t.kind == T_LPAREN)
			return parse_fail(ps, cp, "':' must be next to a name, not '('");
		if (t.kind != T_NAME)
			return parse_fail(ps, t.pos, "expected a name after ':'");
		consume(ps);
		err = new_name(ps, &t, out);
		if (err)
			return err;
		ps->nodes[*out].pos = (uint32_t)cp;
		ps->nodes[*out].colon = COLON_BEFORE;
		ps->nodes[*out].colon_pos = (uint32_t)cp;
		err = peek(ps, &t);
		if (err)
			return err;
		if (t.kind == T_COLON)
			return parse_fail(ps, t.pos, "a name cannot have ':' on both sides");
		return 0;
	case T_NAME:
		consume(ps);
		err = new_name(ps, &t, out);
		if (err)
			return err;
		err = peek(ps, &u);
		if (err || u.kind != T_COLON)
			return err;
		consume(ps);
		ps->nodes[*out].colon = COLON_AFTER;
		ps->nodes[*out].colon_pos = (uint32_t)u.pos;
		err = peek(ps, &u);
		if (err)
			return err;
		if (u.kind == T_COLON)
			return parse_fail(ps, u.pos, "stray ':' (a name takes at most one ':' after it)");
		return 0;
	default:
		return parse_fail(ps, t.pos, "expected a name"); /* callers check starts_primary() */
	}
}

static int parse_seq(struct parser *ps, int depth, uint32_t *out)
{
	char buf[48];
	uint32_t child;
	struct tok t;
	int err;

	err = peek(ps, &t);
	if (err)
		return err;
	err = new_node(ps, N_SEQ, t.pos, out);
	if (err)
		return err;
	for (;;) {
		err = parse_primary(ps, depth, &child);
		if (err)
			return err;
		add_child(ps, *out, child);
		err = peek(ps, &t);
		if (err)
			return err;
		switch (t.kind) {
		case T_ARROW:
			consume(ps);
			err = peek(ps, &t);
			if (err)
				return err;
			if (!starts_primary(t.kind))
				return no_primary(ps, &t, CTX_ARROW, 0);
			continue;
		case T_BAR:
		case T_END:
		case T_SEMI:
			return 0;
		case T_RPAREN:
			if (depth == 0)
				return parse_fail(ps, t.pos,
						  "unbalanced parenthesis: ')' without a matching '('");
			return 0;
		case T_NAME:
			excerpt(buf, sizeof(buf), ps->text + t.pos, t.end - t.pos);
			if (t.quoted)
				return parse_fail(ps, t.pos, "missing '->' before name %s%s", buf,
						  t.end - t.pos > 40 ? "\"" : "");
			return parse_fail(ps, t.pos, "missing '->' before name '%s'", buf);
		case T_STAR:
			return parse_fail(ps, t.pos, "missing '->' before '*'");
		case T_LPAREN:
			return parse_fail(ps, t.pos, "missing '->' before '('");
		default:
			return parse_fail(ps, t.pos, "stray ':'");
		}
	}
}

static int parse_alt(struct parser *ps, int depth, enum ctx ctx, size_t lparen, uint32_t *out)
{
	uint32_t child;
	struct tok t;
	int err;

	err = peek(ps, &t);
	if (err)
		return err;
	err = new_node(ps, N_ALT, t.pos, out);
	if (err)
		return err;
	for (;;) {
		if (!starts_primary(t.kind))
			return no_primary(ps, &t, ctx, lparen);
		err = parse_seq(ps, depth, &child);
		if (err)
			return err;
		add_child(ps, *out, child);
		err = peek(ps, &t);
		if (err)
			return err;
		if (t.kind != T_BAR)
			return 0;
		consume(ps);
		err = peek(ps, &t);
		if (err)
			return err;
		ctx = CTX_BAR;
	}
}

static bool is_keyword(struct parser *ps)
{
	struct tok t, u;

	if (lex_at(ps, 0, &t, false) || t.kind != T_NAME || t.quoted || t.end - t.pos != 4 ||
	    !match_eq_n(ps->text + t.pos, "when", 4, true))
		return false;
	if (lex_at(ps, t.end, &u, false))
		return false;
	if (u.kind == T_NAME || u.kind == T_STAR || u.kind == T_LPAREN)
		return true;
	if (u.kind != T_COLON)
		return false;
	return !lex_at(ps, u.end, &t, false) && t.kind == T_NAME;
}

static int parse_all(struct parser *ps, struct pat **out)
{
	struct tlist tl = { 0 };
	uint64_t nthreads, nelems;
	struct pat *p = NULL;
	uint32_t root;
	struct tok t;
	int err;

	if (ps->len > PAT_MAX_TEXT)
		return parse_fail(ps, 0, "pattern is longer than %d bytes", PAT_MAX_TEXT);
	if (is_keyword(ps)) {
		lex_at(ps, 0, &t, false);
		ps->pos = t.end;
		ps->first_pos = t.pos;
	}
	err = peek(ps, &t);
	if (err)
		return err;
	if (ps->pos == 0)
		ps->first_pos = t.pos;
	err = parse_alt(ps, 0, CTX_START, 0, &root);
	if (err)
		return err;
	err = peek(ps, &t);
	if (err)
		return err;
	if (t.kind == T_SEMI) {
		size_t i = t.end;

		while (i < ps->len && is_space((unsigned char)ps->text[i]))
			i++;
		if (i < ps->len)
			return parse_fail(ps, i, "unexpected text after ';'");
	} else if ((ps->flags & PAT_FROM_FILE) &&
		   memchr(ps->text + ps->first_pos, '\n', ps->last_end - ps->first_pos)) {
		return parse_fail(ps, t.pos, "a pattern spanning several lines must end with ';'");
	}
	err = expand_count(ps, root, &nthreads, &nelems);
	if (err)
		return err;
	err = expand_threads(ps, root, &tl);
	if (err)
		goto cleanup;
	p = calloc(1, sizeof(*p));
	if (!p) {
		err = -ENOMEM;
		goto cleanup;
	}
	p->flags = ps->flags;
	err = expand_build(ps, &tl, p);
	if (err)
		goto cleanup;
	*out = p;
	p = NULL;
cleanup:
	expand_free(&tl);
	pat_free(p);
	return err;
}

int pat_parse(const char *text, unsigned flags, struct pat **out, struct pat_error *err)
{
	struct parser ps = { .text = text ? text : "", .flags = flags, .err = err };
	int ret;

	if (err) {
		err->column = 0;
		err->msg[0] = '\0';
	}
	if (!out)
		return parse_fail(&ps, 0, "no place to store the pattern");
	*out = NULL;
	if (flags & ~(PAT_ICASE | PAT_FROM_FILE))
		return parse_fail(&ps, 0, "unknown flags 0x%x", flags);
	while (ps.len <= PAT_MAX_TEXT && ps.text[ps.len])
		ps.len++;
	ret = parse_all(&ps, out);
	free(ps.nodes);
	pat_free_names(ps.names, ps.nnames);
	free(ps.splits);
	if (ret == -ENOMEM && err) {
		err->column = 0;
		snprintf(err->msg, sizeof(err->msg), "out of memory");
	}
	return ret;
}

void pat_error_location(const char *text, int column, int *line, int *line_column)
{
	int l = 1, c = 1, col = 1;

	for (size_t i = 0; text && text[i] && col < column; i++) {
		if (((unsigned char)text[i] & 0xc0) == 0x80)
			continue;
		col++;
		if (text[i] == '\n') {
			l++;
			c = 1;
		} else {
			c++;
		}
	}
	if (line)
		*line = l;
	if (line_column)
		*line_column = c;
}
