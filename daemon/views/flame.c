// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmon flamegraph: one self-contained SVG, its script written here. Frames are merged
 * into a tree root first; a frame's width is its samples' share of the whole, and a frame
 * narrower than MIN_PX is left out (its samples still widen its parent). Colours are
 * stable per name and tell user, kernel, inline, critical-section and foreign frames
 * apart. Each frame's tooltip is a static <title> (read without the script); the script
 * gives labels, click to zoom, reset, and search with the matched share; the page's query
 * (?search=RE&zoom=ID) drives the same code, for scripts. A graph taller than ICICLE_PX is
 * drawn as an icicle, root at the top, so that it opens on its root, not on blank space; so
 * is an inverted one (callers: each leaf a root). A differential one (pcmon diff) merges two
 * profiles: a frame's width is the mean of its shares of each, so that a frame only one of
 * them has is drawn too.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "util.h"

#define WIDTH	1200.0
#define PAD	10.0
#define FRAME_H 16
#define MIN_PX	0.1
#define ICICLE_PX 800	/* taller: drawn root at the top */
#define TOP	(2 * FRAME_H) /* an icicle's first row: below the title */

struct node {
	const char *name;
	enum xframe_type type;
	uint64_t count;		/* its width: samples, or (differential) a TB + b TA */
	uint64_t a, b;		/* (differential) its samples in A and in B */
	struct node **kids;
	size_t nkids, cap;
};

static struct node *child(struct node *n, const struct xframe *f)
{
	struct node *c;

	for (size_t i = 0; i < n->nkids; i++)
		if (n->kids[i]->type == f->type && !strcmp(n->kids[i]->name, f->name))
			return n->kids[i];
	if (GROW(n->kids, n->cap, n->nkids + 1) || !(c = calloc(1, sizeof(*c))))
		return NULL;
	c->name = f->name;
	c->type = f->type;
	return n->kids[n->nkids++] = c;
}

static void tree_free(struct node *n)
{
	for (size_t i = 0; i < n->nkids; i++)
		tree_free(n->kids[i]);
	free(n->kids);
	free(n);
}

static int by_name(const void *a, const void *b)
{
	const struct node *x = *(struct node *const *)a, *y = *(struct node *const *)b;
	int c = strcmp(x->name, y->name);

	return c ? c : (int)x->type - (int)y->type;
}

static int depth_of(const struct node *n)
{
	int d = 0;

	for (size_t i = 0; i < n->nkids; i++) {
		int k = depth_of(n->kids[i]);

		d = k > d ? k : d;
	}
	return d + 1;
}

void export_xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				fputc(*s, f);
		}
	}
}

/* A colour per name, stable across runs, in the family of its frame type. */
static void colour(char *buf, size_t len, const struct node *n)
{
	uint64_t h = hash_bytes(n->name, strlen(n->name));
	unsigned a = h & 0xff, b = (h >> 8) & 0xff;
	unsigned char rgb[3];

	switch (n->type) {
	case XF_KERNEL: /* orange */
		rgb[0] = 230, rgb[1] = 120 + a * 60 / 255, rgb[2] = 30 + b * 30 / 255;
		break;
	case XF_INLINE: /* aqua */
		rgb[0] = 70 + a * 40 / 255, rgb[1] = 190 + b * 40 / 255, rgb[2] = 200;
		break;
	case XF_CRITICAL: /* purple */
		rgb[0] = 160 + a * 40 / 255, rgb[1] = 110 + b * 30 / 255, rgb[2] = 220;
		break;
	case XF_GROUP: /* green: who took the samples (--by) */
		rgb[0] = 70 + a * 40 / 255, rgb[1] = 170 + b * 40 / 255, rgb[2] = 80 + a * 30 / 255;
		break;
	case XF_FOREIGN: /* grey */
	case XF_TRUNCATED:
		rgb[0] = rgb[1] = rgb[2] = 150 + a * 30 / 255;
		break;
	default: /* user code: red to yellow */
		rgb[0] = 200 + a * 55 / 255, rgb[1] = 50 + b * 170 / 255, rgb[2] = 40;
		break;
	}
	snprintf(buf, len, "rgb(%u,%u,%u)", rgb[0], rgb[1], rgb[2]);
}

static const char *const type_names[] = {
	[XF_USER] = "user", [XF_KERNEL] = "kernel", [XF_INLINE] = "inline",
	[XF_CRITICAL] = "critical", [XF_FOREIGN] = "foreign", [XF_TRUNCATED] = "truncated",
	[XF_GROUP] = "group",
};

struct draw {
	FILE *f;
	const struct flame_tint *tint;	/* a differential flame graph's colours, or NULL */
	uint64_t total;
	uint64_t ta, tb;	/* (differential) A's and B's samples */
	int height;
	bool icicle;
	int id;
	uint64_t pruned;	/* samples of frames left out (and their callees) */
};

/* A frame's name as drawn: a critical section's and a group's in brackets. */
static void frame_name(FILE *f, const struct node *n)
{
	if (n->type != XF_CRITICAL && n->type != XF_GROUP) {
		export_xml_text(f, n->name);
		return;
	}
	fputs(n->type == XF_CRITICAL ? "[critical:" : "[", f);
	export_xml_text(f, n->name);
	fputs("]", f);
}

static void draw(struct draw *d, const struct node *n, uint64_t x, int depth)
{
	double px = PAD + (WIDTH - 2 * PAD) * x / d->total;
	double w = (WIDTH - 2 * PAD) * n->count / d->total;
	int y = d->icicle ? TOP + depth * FRAME_H : d->height - (depth + 1) * FRAME_H - 2 * FRAME_H;
	char fill[32];

	if (w < MIN_PX) {
		d->pruned += n->count;
		return;
	}
	if (!d->tint || !d->tint->fn(d->tint->ctx, n->name, n->a, n->b, fill, sizeof(fill)))
		colour(fill, sizeof(fill), n);
	fprintf(d->f, "<g class=\"f\" id=\"f%d\" data-x=\"%llu\" data-n=\"%llu\" data-d=\"%d\" data-t=\"%s\" ",
		d->id++, (unsigned long long)x, (unsigned long long)n->count, depth, type_names[n->type]);
	if (d->tint)
		fprintf(d->f, "data-a=\"%llu\" data-b=\"%llu\" ", (unsigned long long)n->a,
			(unsigned long long)n->b);
	fputs("data-name=\"", d->f);
	frame_name(d->f, n);
	fputs("\"><title>", d->f);
	frame_name(d->f, n);
	if (d->tint)
		fprintf(d->f, " (A %.2f%%, B %.2f%%)", d->ta ? 100.0 * n->a / d->ta : 0,
			d->tb ? 100.0 * n->b / d->tb : 0);
	else
		fprintf(d->f, " (%llu samples, %.2f%%)", (unsigned long long)n->count,
			100.0 * n->count / d->total);
	fprintf(d->f, "</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\"/><text x=\"%.2f\" y=\"%d\"></text></g>\n",
		px, y, w, FRAME_H - 1, fill, px + 3, y + FRAME_H - 4);
	for (size_t i = 0; i < n->nkids; i++) {
		draw(d, n->kids[i], x, depth + 1);
		x += n->kids[i]->count;
	}
}

static void sort_tree(struct node *n)
{
	if (n->nkids)
		qsort(n->kids, n->nkids, sizeof(*n->kids), by_name);
	for (size_t i = 0; i < n->nkids; i++)
		sort_tree(n->kids[i]);
}

/* The page's script: labels, tooltips, zoom, search. */
static const char script[] =
	"var W = %.1f, PAD = %.1f, TOTAL = %llu, TA = %llu, TB = %llu, frames, details, matched, unzoomBtn, resetBtn;\n"
	"function num(g, k) { return +g.getAttribute('data-' + k); }\n"
	"function name(g) { return g.getAttribute('data-name'); }\n"
	"function pct(n) { return (100 * n / TOTAL).toFixed(2); }\n"
	"function label(g) {\n"
	"  var r = g.querySelector('rect'), t = g.querySelector('text'), w = +r.getAttribute('width');\n"
	"  var fit = Math.floor((w - 6) / 7), s = name(g);\n"
	"  t.textContent = fit < 3 ? '' : s.length <= fit ? s : s.slice(0, fit - 2) + '..';\n"
	"  t.setAttribute('x', +r.getAttribute('x') + 3);\n"
	"}\n"
	"function place(g, x0, n0) {\n"
	"  var r = g.querySelector('rect'), x = num(g, 'x'), n = num(g, 'n');\n"
	"  var lo = Math.max(x, x0), hi = Math.min(x + n, x0 + n0);\n"
	"  if (hi <= lo) { g.style.display = 'none'; return; }\n"
	"  g.style.display = '';\n"
	"  r.setAttribute('x', PAD + (W - 2 * PAD) * (lo - x0) / n0);\n"
	"  r.setAttribute('width', (W - 2 * PAD) * (hi - lo) / n0);\n"
	"  label(g);\n"
	"}\n"
	"function zoom(z) {\n"
	"  var x0 = num(z, 'x'), n0 = num(z, 'n'), d0 = num(z, 'd');\n"
	"  frames.forEach(function (g) {\n"
	"    place(g, x0, n0);\n"
	"    g.classList.toggle('parent', num(g, 'd') < d0);\n"
	"    if (num(g, 'd') >= d0 && (num(g, 'x') < x0 || num(g, 'x') + num(g, 'n') > x0 + n0))\n"
	"      g.style.display = 'none';\n"
	"  });\n"
	"  document.documentElement.setAttribute('data-zoom', z.id);\n"
	"  unzoomBtn.classList.remove('hide');\n"
	"}\n"
	"function unzoom() {\n"
	"  frames.forEach(function (g) { place(g, 0, TOTAL); g.classList.remove('parent'); });\n"
	"  document.documentElement.removeAttribute('data-zoom');\n"
	"  unzoomBtn.classList.add('hide');\n"
	"}\n"
	"function search(re) {\n"
	"  var rx = new RegExp(re), spans = [], sum = 0, end = -1;\n"
	"  frames.forEach(function (g) {\n"
	"    var hit = rx.test(name(g));\n"
	"    g.classList.toggle('match', hit);\n"
	"    if (hit) spans.push([num(g, 'x'), num(g, 'x') + num(g, 'n')]);\n"
	"  });\n"
	"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
	"  spans.forEach(function (s) {\n"
	"    if (s[1] <= end) return;\n"
	"    sum += s[1] - Math.max(s[0], end); end = s[1];\n"
	"  });\n"
	"  matched.textContent = 'Matched: ' + pct(sum) + '%%';\n"
	"  document.documentElement.setAttribute('data-matched', pct(sum));\n"
	"  resetBtn.classList.remove('hide');\n"
	"}\n"
	"function resetSearch() {\n"
	"  frames.forEach(function (g) { g.classList.remove('match'); });\n"
	"  matched.textContent = ''; resetBtn.classList.add('hide');\n"
	"  document.documentElement.removeAttribute('data-matched');\n"
	"}\n"
	"function askSearch() {\n"
	"  var re = prompt('Search for (a regular expression):', '');\n"
	"  if (re) search(re);\n"
	"}\n"
	"function init() {\n"
	"  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
	"  details = document.getElementById('details');\n"
	"  matched = document.getElementById('matched');\n"
	"  unzoomBtn = document.getElementById('unzoom');\n"
	"  resetBtn = document.getElementById('resetsearch');\n"
	"  frames.forEach(function (g) {\n"
	"    var info = TA ? name(g) + ' (A ' + (100 * num(g, 'a') / TA).toFixed(2) + '%%, B ' +\n"
	"      (100 * num(g, 'b') / TB).toFixed(2) + '%%)'\n"
	"      : name(g) + ' (' + num(g, 'n') + ' samples, ' + pct(num(g, 'n')) + '%%)';\n"
	"    label(g);\n"
	"    g.addEventListener('click', function () { zoom(g); });\n"
	"    g.addEventListener('mouseover', function () { details.textContent = info; });\n"
	"    g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"  });\n"
	"  var q = new URLSearchParams(location.search);\n"
	"  if (q.get('zoom') && document.getElementById(q.get('zoom')))\n"
	"    document.getElementById(q.get('zoom')).dispatchEvent(new MouseEvent('click'));\n"
	"  if (q.get('search')) search(q.get('search'));\n"
	"  document.documentElement.setAttribute('data-ready', '1');\n"
	"}\n";

/* @p's samples into the tree: as they are (@side < 0), or as side @side of two; @inverted:
 * each stack leaf first (callers) */
static int add_profile(struct node *root, const struct xprof *p, int side, uint64_t weight,
		       bool inverted, bool *grouped)
{
	struct xframe *fr = NULL;
	size_t cap = 0;
	int err = -ENOMEM;

	for (int i = 0; i < p->nsamples; i++) {
		const struct xsample *s = &p->samples[i];
		int n = xprof_frames(p, s, &fr, &cap);
		struct node *at = root;
		uint64_t w = s->count * weight;

		if (n < 0)
			goto out;
		root->count += w;
		*(side ? &root->b : &root->a) += s->count;
		*grouped |= n && fr[0].type == XF_GROUP;
		for (int j = 0; j < n && at; j++) {
			at = child(at, &fr[inverted ? n - 1 - j : j]);
			if (at) {
				at->count += w;
				*(side ? &at->b : &at->a) += s->count;
			}
		}
		if (!at)
			goto out;
	}
	err = 0;
out:
	free(fr);
	return err;
}

static int flame_write(FILE *f, struct node *root, const struct xprof *p, const char *title,
		       const struct flame_tint *tint, uint64_t ta, uint64_t tb, bool grouped,
		       bool inverted);

/* Two profiles merged, their samples in *@ta and *@tb: a frame's width a TB + b TA, the
 * mean of its shares times 2 TA TB. */
static int add_two(struct node *root, const struct xprof *a, const struct xprof *b,
		   bool inverted, uint64_t *ta, uint64_t *tb, bool *grouped)
{
	int err;

	for (int i = 0; i < a->nsamples; i++)
		*ta += a->samples[i].count;
	for (int i = 0; i < b->nsamples; i++)
		*tb += b->samples[i].count;
	err = add_profile(root, a, 0, *tb ? *tb : 1, inverted, grouped);
	return err ? err : add_profile(root, b, 1, *ta ? *ta : 1, inverted, grouped);
}

int export_flamegraph(FILE *f, const struct xprof *p, const char *title,
		      const struct flame_opts *o)
{
	struct node *root = calloc(1, sizeof(*root));
	bool grouped = false, inverted = o && o->inverted;
	int err;

	if (!root)
		return -ENOMEM;
	err = add_profile(root, p, -1, 1, inverted, &grouped);
	if (!err)
		err = flame_write(f, root, p, title, NULL, 0, 0, grouped, inverted);
	tree_free(root);
	return err;
}

int export_flamegraph_diff(FILE *f, const struct xprof *a, const struct xprof *b,
			   const char *title, const struct flame_tint *tint)
{
	struct node *root = calloc(1, sizeof(*root));
	uint64_t ta = 0, tb = 0;
	bool grouped = false;
	int err;

	if (!root)
		return -ENOMEM;
	err = add_two(root, a, b, false, &ta, &tb, &grouped);
	if (!err)
		err = flame_write(f, root, b, title, tint, ta, tb, grouped, false);
	tree_free(root);
	return err;
}

static int flame_write(FILE *f, struct node *root, const struct xprof *p, const char *title,
		       const struct flame_tint *tint, uint64_t ta, uint64_t tb, bool grouped,
		       bool inverted)
{
	struct draw d = { .f = f, .tint = tint, .ta = ta, .tb = tb };
	int depth;

	sort_tree(root);
	depth = depth_of(root) - 1;
	d.total = root->count ? root->count : 1;
	d.height = (depth + 5) * FRAME_H;
	d.icicle = inverted || d.height > ICICLE_PX;
	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		   "<svg version=\"1.1\" width=\"%.0f\" height=\"%d\" viewBox=\"0 0 %.0f %d\" "
		   "xmlns=\"http://www.w3.org/2000/svg\" onload=\"init()\" data-total=\"%llu\" "
		   "data-layout=\"%s\" data-inverted=\"%d\">\n",
		WIDTH, d.height, WIDTH, d.height, (unsigned long long)root->count,
		d.icicle ? "icicle" : "flame", inverted);
	fputs("<style>\n"
	      "text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }\n"
	      "g.f text { pointer-events: none; }\n"
	      "g.f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
	      "g.parent rect { opacity: 0.5; }\n"
	      "g.match rect { fill: rgb(230,0,230); }\n"
	      ".hide { display: none; }\n"
	      ".button { cursor: pointer; text-decoration: underline; }\n"
	      "</style>\n<script type=\"text/ecmascript\"><![CDATA[\n", f);
	fprintf(f, script, WIDTH, PAD, (unsigned long long)d.total, (unsigned long long)ta,
		(unsigned long long)tb);
	fputs("]]></script>\n", f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%d\" fill=\"#f8f8f4\"/>\n", WIDTH,
		d.height);
	fprintf(f, "<text x=\"%.0f\" y=\"24\" text-anchor=\"middle\" style=\"font-size:17px\">", WIDTH / 2);
	if (title) {
		export_xml_text(f, title);
	} else {
		fputs("pcmon: ", f);
		export_xml_text(f, p->target);
		fprintf(f, " (%llu samples, %s%s)", (unsigned long long)root->count, p->mode,
			inverted ? ", inverted: callers" : "");
	}
	fputs("</text>\n", f);
	fprintf(f, "<text id=\"unzoom\" class=\"button hide\" x=\"%.0f\" y=\"24\" onclick=\"unzoom()\">Reset Zoom</text>\n", PAD);
	fprintf(f, "<text id=\"search\" class=\"button\" x=\"%.0f\" y=\"24\" text-anchor=\"end\" onclick=\"askSearch()\">Search</text>\n", WIDTH - PAD);
	fprintf(f, "<text id=\"resetsearch\" class=\"button hide\" x=\"%.0f\" y=\"24\" text-anchor=\"end\" onclick=\"resetSearch()\">Reset Search</text>\n", WIDTH - PAD - 60);
	fprintf(f, "<text id=\"matched\" x=\"%.0f\" y=\"%d\" text-anchor=\"end\"> </text>\n", WIDTH - PAD, d.height - 6);
	fprintf(f, "<text id=\"details\" x=\"%.0f\" y=\"%d\"> </text>\n", PAD, d.height - 6);
	fputs("<g id=\"frames\">\n", f);
	for (size_t i = 0, x = 0; i < root->nkids; x += root->kids[i++]->count)
		draw(&d, root->kids[i], x, 0);
	fputs("</g>\n", f);
	if (tint)
		fprintf(f, "<text x=\"%.0f\" y=\"%d\" text-anchor=\"middle\" style=\"font-size:10px;fill:#555\">%s%s</text>\n",
			WIDTH / 2, d.height - 6 - FRAME_H, tint->legend,
			d.pruned ? " · narrow frames left out" : "");
	else
		fprintf(f, "<text x=\"%.0f\" y=\"%d\" text-anchor=\"middle\" style=\"font-size:10px;fill:#555\">"
		   "user: red-yellow · kernel: orange · inline: aqua · critical section: purple · foreign, [truncated]: grey"
		   "%s%s</text>\n",
		WIDTH / 2, d.height - 6 - FRAME_H, grouped ? " · group (--by): green" : "",
		d.pruned ? " · narrow frames left out" : "");
	fputs("</svg>\n", f);
	return ferror(f) ? -EIO : 0;
}

/* ---- the tree as JSON, for a page that draws it */

static const char *const type_keys[] = {
	[XF_USER] = "u", [XF_KERNEL] = "k", [XF_INLINE] = "i", [XF_CRITICAL] = "c",
	[XF_FOREIGN] = "f", [XF_TRUNCATED] = "t", [XF_GROUP] = "g",
};

/* The nodes at least @thr wide, @n among them. */
static size_t wide(const struct node *n, uint64_t thr)
{
	size_t k = 1;

	for (size_t i = 0; i < n->nkids; i++)
		if (n->kids[i]->count >= thr)
			k += wide(n->kids[i], thr);
	return k;
}

static cJSON *node_json(const struct node *n, uint64_t thr, bool two, uint64_t *pruned)
{
	cJSON *o = cJSON_CreateObject(), *c;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "n", n->name);
	cJSON_AddStringToObject(o, "t", type_keys[n->type]);
	cJSON_AddNumberToObject(o, "v", (double)n->count);
	if (two) {
		cJSON_AddNumberToObject(o, "a", (double)n->a);
		cJSON_AddNumberToObject(o, "b", (double)n->b);
	}
	c = cJSON_AddArrayToObject(o, "c");
	for (size_t i = 0; c && i < n->nkids; i++) {
		cJSON *k;

		if (n->kids[i]->count < thr) {
			*pruned += n->kids[i]->count;
			continue;
		}
		k = node_json(n->kids[i], thr, two, pruned);
		if (!k || !cJSON_AddItemToArray(c, k)) {
			cJSON_Delete(k);
			c = NULL;
		}
	}
	if (!c) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int flame_tree_json(const struct xprof *a, const struct xprof *b, bool inverted,
		    size_t max_nodes, cJSON **out)
{
	struct node *root = calloc(1, sizeof(*root));
	uint64_t ta = 0, tb = 0, thr = 1, pruned = 0;
	bool grouped = false;
	cJSON *o = NULL, *r;
	int err;

	*out = NULL;
	if (!root)
		return -ENOMEM;
	err = b ? add_two(root, a, b, inverted, &ta, &tb, &grouped)
		: add_profile(root, a, -1, 1, inverted, &grouped);
	if (err)
		goto out;
	sort_tree(root);
	root->name = "all";
	while (max_nodes && wide(root, thr) > max_nodes && thr < UINT64_MAX / 2)
		thr *= 2;
	err = -ENOMEM;
	r = node_json(root, thr, b != NULL, &pruned);
	o = r ? cJSON_CreateObject() : NULL;
	if (!o) {
		cJSON_Delete(r);
		goto out;
	}
	cJSON_AddNumberToObject(o, "total", (double)root->count);
	cJSON_AddNumberToObject(o, "pruned", (double)pruned);
	cJSON_AddBoolToObject(o, "inverted", inverted);
	if (b) {
		cJSON_AddNumberToObject(o, "total_a", (double)ta);
		cJSON_AddNumberToObject(o, "total_b", (double)tb);
	}
	cJSON_AddItemToObject(o, "root", r);
	*out = o;
	err = 0;
out:
	tree_free(root);
	return err;
}
