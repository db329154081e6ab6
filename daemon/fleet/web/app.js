// SPDX-License-Identifier: GPL-2.0-only
// pcmond's page (docs/web.md): the published targets; for one, its timeline (drag to pick a
// window), the flame graph of that window (click to zoom, search, callers), its listing
// (click a column to sort) and the diff of two windows. Everything it shows comes from
// /api/targets (docs/fleet.md); every name is set as text, never as markup.
'use strict';

const SVGNS = 'http://www.w3.org/2000/svg';
const W = 1200, ROW = 16;
const state = { target: null, since: null, until: null, a: null, b: null, verdicts: null,
		flame: null, zoom: null, rows: [], sortKey: 'deep', sortDesc: true };

function $(id) { return document.getElementById(id); }

function el(tag, attrs, text) {
	const e = tag.startsWith('svg:') ? document.createElementNS(SVGNS, tag.slice(4))
					 : document.createElement(tag);
	for (const k in attrs || {})
		e.setAttribute(k, attrs[k]);
	if (text !== undefined)
		e.textContent = text;
	return e;
}

function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }

async function api(path) {
	const r = await fetch('/api/targets' + path, { cache: 'no-store' });
	const body = await r.text();
	if (!r.ok)
		throw new Error(body.trim());
	return JSON.parse(body);
}

function windowArgs() {
	const q = [];
	if (state.since) q.push('since=' + encodeURIComponent(state.since));
	if (state.until) q.push('until=' + encodeURIComponent(state.until));
	return q;
}

function fmtTime(s) { return new Date(s * 1000).toLocaleTimeString(); }

// ---- targets

async function loadTargets() {
	let doc;
	try {
		doc = await api('');
	} catch (e) {
		$('host').textContent = e.message;
		return;
	}
	$('host').textContent = 'on ' + doc.host;
	const t = clear($('tlist'));
	const head = el('tr');
	for (const h of ['id', 'name', 'kind', 'state', 'samples'])
		head.appendChild(el('th', h === 'name' ? { class: 'name' } : {}, h));
	t.appendChild(head);
	for (const x of doc.targets) {
		const tr = el('tr', { class: 'target', 'data-id': String(x.id) });
		tr.appendChild(el('td', {}, String(x.id)));
		tr.appendChild(el('td', { class: 'name' }, x.name));
		tr.appendChild(el('td', {}, x.kind));
		tr.appendChild(el('td', {}, x.state));
		tr.appendChild(el('td', {}, String(x.samples || 0)));
		tr.addEventListener('click', () => select(x.id, x.name));
		t.appendChild(tr);
	}
}

async function select(id, name, keepWindow) {
	state.target = id;
	if (!keepWindow)
		state.since = state.until = null;
	state.a = state.b = state.verdicts = null;
	$('main').setAttribute('data-since', state.since || '');
	$('main').setAttribute('data-until', state.until || '');
	$('view').hidden = false;
	$('vtitle').textContent = 'target ' + id + ' ' + name;
	clear($('diff'));
	$('ab').textContent = '';
	$('compare').disabled = true;
	await loadTimeline();
	await refresh();
}

// ---- the timeline: samples per slice; dragging picks a window of whole slices

async function loadTimeline() {
	const doc = await api('/' + state.target + '/timeline?top=5');
	const sl = doc.timeline.slices;
	const box = clear($('timeline'));
	if (!sl.length)
		return;
	const h = 80, t0 = sl[0].t0, t1 = sl[sl.length - 1].t1;
	const max = Math.max(1, ...sl.map((s) => s.counted));
	const svg = el('svg:svg', { viewBox: `0 0 ${W} ${h + 14}`, 'data-t0': t0, 'data-t1': t1 });
	const x = (t) => (W * (t - t0)) / Math.max(1e-9, t1 - t0);
	for (const s of sl) {
		const bh = (h * s.counted) / max;
		const r = el('svg:rect', { x: x(s.t0), y: h - bh, width: Math.max(0.5, x(s.t1) - x(s.t0) - 1),
					   height: bh, fill: '#7a9cd6', 'data-t0': s.t0, 'data-t1': s.t1 });
		r.appendChild(el('svg:title', {}, `${fmtTime(s.t0)}: ${s.counted} samples`));
		svg.appendChild(r);
	}
	// the hottest procedures, each a line of its samples per slice, named in the legend
	const legend = clear($('legend'));
	doc.timeline.procedures.forEach((p, i) => {
		const pts = sl.map((s, k) => `${(x(s.t0) + x(s.t1)) / 2},${h - (h * (p.deep[k] || 0)) / max}`);
		svg.appendChild(el('svg:polyline', { points: pts.join(' '), class: 'p' + (i % 6),
						     'data-name': p.name }));
		/* (colours by class: the page's policy allows no inline style) */
		legend.appendChild(el('span', { class: 'p' + (i % 6) }, '— ' + p.name + ' '));
	});
	svg.appendChild(el('svg:text', { x: 2, y: h + 12 }, fmtTime(t0)));
	svg.appendChild(el('svg:text', { x: W - 2, y: h + 12, 'text-anchor': 'end' }, fmtTime(t1)));
	const brush = el('svg:rect', { class: 'brush', x: 0, y: 0, width: 0, height: h });
	svg.appendChild(brush);
	let from = null;
	const at = (ev) => {
		const b = svg.getBoundingClientRect();
		return Math.min(W, Math.max(0, ((ev.clientX - b.left) * W) / b.width));
	};
	svg.addEventListener('mousedown', (ev) => { from = at(ev); ev.preventDefault(); });
	svg.addEventListener('mousemove', (ev) => {
		if (from === null) return;
		const to = at(ev);
		brush.setAttribute('x', Math.min(from, to));
		brush.setAttribute('width', Math.abs(to - from));
	});
	svg.addEventListener('mouseup', (ev) => {
		if (from === null) return;
		const to = at(ev), lo = Math.min(from, to), hi = Math.max(from, to);
		from = null;
		if (hi - lo < 2) return;
		// the whole slices whose middle the drag covers
		const mid = (s) => x((s.t0 + s.t1) / 2);
		const picked = sl.filter((s) => mid(s) >= lo && mid(s) <= hi);
		if (!picked.length) return;
		setWindow('@' + Math.floor(picked[0].t0), '@' + Math.ceil(picked[picked.length - 1].t1));
	});
	box.appendChild(svg);
}

function setWindow(since, until) {
	state.since = since;
	state.until = until;
	$('main').setAttribute('data-since', since || '');
	$('main').setAttribute('data-until', until || '');
	$('window').textContent = since ? `window ${since}..${until}` : 'whole life';
	refresh();
}

// ---- the flame graph: an icicle, root at the top

function flatten(node, x, depth, out) {
	out.push({ node, x, depth });
	let cx = x;
	for (const c of node.c) {
		flatten(c, cx, depth + 1, out);
		cx += c.v;
	}
	return out;
}

const COLOURS = { u: [205, 90, 40], k: [230, 140, 30], i: [70, 190, 200], c: [150, 80, 200],
		  f: [160, 160, 160], t: [160, 160, 160], g: [90, 170, 90] };

function colour(n) {
	let h = 0;
	for (const ch of n.n) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
	const [r, g, b] = COLOURS[n.t] || COLOURS.u;
	return `rgb(${r + (h % 40)},${g + ((h >> 8) % 50)},${b + ((h >> 16) % 30)})`;
}

function drawFlame() {
	const f = state.flame;
	const box = clear($('flame'));
	if (!f || !f.root)
		return;
	const root = state.zoom || f.root;
	const all = flatten(root, 0, 0, []);
	const depth = Math.max(...all.map((e) => e.depth)) + 1;
	const svg = el('svg:svg', { viewBox: `0 0 ${W} ${depth * ROW}`, 'data-total': root.v });
	for (const { node, x, depth: d } of all) {
		const w = (W * node.v) / Math.max(1, root.v);
		if (w < 0.1) continue;
		const g = el('svg:g', { class: 'f', 'data-name': node.n, 'data-v': node.v,
					'data-x': x, 'data-d': d });
		if (state.verdicts && state.verdicts[node.n])
			g.classList.add(state.verdicts[node.n]);
		const r = el('svg:rect', { x: (W * x) / root.v, y: d * ROW, width: w, height: ROW - 1,
					   fill: state.verdicts ? verdictFill(node.n) : colour(node) });
		const pct = ((100 * node.v) / Math.max(1, f.root.v)).toFixed(2);
		g.appendChild(el('svg:title', {}, `${node.n} (${pct}%)`));
		g.appendChild(r);
		if (w > 30)
			g.appendChild(el('svg:text', { x: (W * x) / root.v + 3, y: d * ROW + ROW - 4 },
					 node.n.length * 7 < w - 6 ? node.n
						: node.n.slice(0, Math.max(0, Math.floor((w - 6) / 7) - 2)) + '..'));
		g.addEventListener('click', () => { state.zoom = node; drawFlame(); search(); });
		svg.appendChild(g);
	}
	box.appendChild(svg);
}

function verdictFill(name) {
	const v = state.verdicts[name];
	return v === 'grew' ? 'rgb(240,110,110)' : v === 'shrank' ? 'rgb(110,130,240)'
							: 'rgb(215,215,210)';
}

// The share of samples under the frames whose name matches: the union of their spans.
function search() {
	const text = $('search').value, m = $('matched');
	const frames = Array.from(document.querySelectorAll('#flame g.f'));
	let rx = null;
	try {
		rx = text ? new RegExp(text) : null;
	} catch (e) {
		m.textContent = 'not a regular expression';
		return;
	}
	const spans = [];
	for (const g of frames) {
		const hit = rx !== null && rx.test(g.getAttribute('data-name'));
		g.classList.toggle('match', hit);
		if (hit)
			spans.push([+g.getAttribute('data-x'), +g.getAttribute('data-x') + +g.getAttribute('data-v')]);
	}
	spans.sort((a, b) => a[0] - b[0]);
	let sum = 0, end = -1;
	for (const [a, b] of spans) {
		if (b <= end) continue;
		sum += b - Math.max(a, end);
		end = b;
	}
	const total = state.flame ? state.flame.root.v : 1;
	const pct = rx ? ((100 * sum) / Math.max(1, total)).toFixed(2) : '';
	m.textContent = rx ? `matched: ${pct}%` : '';
	m.setAttribute('data-matched', pct);
}

// ---- the listing: procedures, sortable

function drawListing() {
	const t = clear($('listing'));
	const cols = [['procedure', 'name'], ['shallow', 'n'], ['shallow_pct', 'n'], ['deep', 'n'],
		      ['deep_pct', 'n']];
	const head = el('tr');
	for (const [k, kind] of cols) {
		const th = el('th', kind === 'name' ? { class: 'name' } : {}, k);
		th.addEventListener('click', () => {
			state.sortDesc = state.sortKey === k ? !state.sortDesc : kind !== 'name';
			state.sortKey = k;
			drawListing();
		});
		head.appendChild(th);
	}
	t.appendChild(head);
	const rows = state.rows.slice().sort((a, b) => {
		const x = a[state.sortKey], y = b[state.sortKey];
		const c = typeof x === 'string' ? x.localeCompare(y) : x - y;
		return state.sortDesc ? -c : c;
	});
	for (const r of rows.slice(0, 200)) {
		const tr = el('tr', { 'data-name': r.name });
		tr.addEventListener('click', () => showLines(r.procedure));
		for (const [k, kind] of cols)
			tr.appendChild(el('td', kind === 'name' ? { class: 'name' } : {},
					  typeof r[k] === 'number' && k.endsWith('pct') ? r[k].toFixed(2)
											: String(r[k])));
		t.appendChild(tr);
	}
}

// ---- a procedure's samples by source line

async function showLines(proc) {
	const q = windowArgs().concat(['proc=' + encodeURIComponent(proc)]);
	const box = clear($('lines'));
	let doc;
	try {
		doc = await api('/' + state.target + '/lines?' + q.join('&'));
	} catch (e) {
		box.textContent = e.message;
		return;
	}
	const o = doc.lines;
	box.appendChild(el('h3', {}, `${o.procedure}: ${o.count} samples by line`));
	const t = el('table', { id: 'linetable', 'data-procedure': o.procedure, 'data-count': o.count });
	const head = el('tr');
	for (const h of ['line', 'samples', '% of it', '% of all'])
		head.appendChild(el('th', h === 'line' ? { class: 'name' } : {}, h));
	t.appendChild(head);
	for (const l of o.lines) {
		const tr = el('tr', { 'data-count': l.count });
		tr.appendChild(el('td', { class: 'name' }, l.line ? `${l.file}:${l.line}` : '?'));
		tr.appendChild(el('td', {}, String(l.count)));
		tr.appendChild(el('td', {}, l.percent_of_procedure.toFixed(1)));
		tr.appendChild(el('td', {}, l.percent_of_counted.toFixed(1)));
		t.appendChild(tr);
	}
	box.appendChild(t);
}

// ---- what the target's other instruments list (calls, legs, allocations, tails): each
// table of rows in their sections, as the listing's JSON has it ("calls.procedures",
// "tables.legs", ...)

const PLAIN = new Set(['target', 'summary', 'procedures', 'window', 'timeline', 'critical',
		       'groups', 'deep_order']);

function table(key, rows) {
	const cols = Object.keys(rows[0]).filter((k) => typeof rows[0][k] !== 'object');
	const t = el('table', { 'data-section': key });
	const head = el('tr');
	for (const c of cols)
		head.appendChild(el('th', {}, c));
	t.appendChild(head);
	for (const r of rows.slice(0, 100)) {
		const tr = el('tr');
		for (const c of cols)
			tr.appendChild(el('td', typeof r[c] === 'string' ? { class: 'name' } : {},
					  r[c] === undefined || r[c] === null ? '' : String(r[c])));
		t.appendChild(tr);
	}
	return t;
}

function drawSection(box, key, sec) {
	for (const sub of Object.keys(sec)) {
		const rows = sec[sub];
		if (!Array.isArray(rows) || !rows.length || typeof rows[0] !== 'object')
			continue;
		box.appendChild(el('h3', {}, `${key}: ${sub}`));
		box.appendChild(table(`${key}.${sub}`, rows));
	}
}

function drawExtras(listing) {
	const box = clear($('extras'));
	for (const key of Object.keys(listing)) {
		const sec = listing[key];
		if (PLAIN.has(key) || !sec || typeof sec !== 'object')
			continue;
		if (Array.isArray(sec)) /* (a list of sections: each tailed leg's, "tails.0") */
			sec.forEach((x, i) => x && typeof x === 'object' && drawSection(box, `${key}.${i}`, x));
		else
			drawSection(box, key, sec);
	}
}

async function refresh() {
	const q = windowArgs();
	const fq = q.concat($('inverted').checked ? ['inverted=1'] : []);
	try {
		const [listing, flame] = await Promise.all([
			api('/' + state.target + '/listing' + (q.length ? '?' + q.join('&') : '')),
			api('/' + state.target + '/flame' + (fq.length ? '?' + fq.join('&') : ''))]);
		state.rows = listing.procedures;
		drawExtras(listing);
		state.flame = flame.flame;
		state.zoom = null;
		drawListing();
		drawFlame();
		search();
		document.body.setAttribute('data-ready', '1');
	} catch (e) {
		$('window').textContent = e.message;
	}
}

// ---- the diff of two windows

async function compare() {
	const spec = (w) => `${w[0] || ''}..${w[1] || ''}`;
	const doc = await api(`/${state.target}/diff?a=${encodeURIComponent(spec(state.a))}` +
			      `&b=${encodeURIComponent(spec(state.b))}`);
	state.verdicts = {};
	const box = clear($('diff'));
	const t = el('table');
	const head = el('tr');
	for (const h of ['procedure', 'A %', 'B %', 'change pp', 'verdict'])
		head.appendChild(el('th', h === 'procedure' ? { class: 'name' } : {}, h));
	t.appendChild(head);
	for (const p of doc.diff.procedures) {
		const change = p.significant ? p.change : 'same';
		const name = p.procedure;
		state.verdicts[name] = change;
		const tr = el('tr', { 'data-name': name, 'data-change': change, class: change });
		tr.appendChild(el('td', { class: 'name' }, name));
		tr.appendChild(el('td', {}, p.a_deep_pct.toFixed(2)));
		tr.appendChild(el('td', {}, p.b_deep_pct.toFixed(2)));
		tr.appendChild(el('td', {}, p.effect.pp.toFixed(2)));
		tr.appendChild(el('td', {}, change));
		t.appendChild(tr);
	}
	box.appendChild(el('p', {}, `A: ${doc.diff.a.name} · B: ${doc.diff.b.name} · ` +
			   doc.diff.test.name));
	box.appendChild(t);
	state.flame = doc.flame;
	state.zoom = null;
	drawFlame();
}

function init() {
	$('search').addEventListener('input', search);
	$('inverted').addEventListener('change', refresh);
	$('reset').addEventListener('click', () => { state.zoom = null; drawFlame(); search(); });
	$('whole').addEventListener('click', () => setWindow(null, null));
	$('setA').addEventListener('click', () => { state.a = [state.since, state.until]; ab(); });
	$('setB').addEventListener('click', () => { state.b = [state.since, state.until]; ab(); });
	$('compare').addEventListener('click', () => compare().catch((e) => {
		$('ab').textContent = e.message;
	}));
	// the hash names what to show: #t=ID&since=T&until=T&q=RE&inv=1 (a link, or a script)
	const h = new URLSearchParams(location.hash.slice(1));
	if (h.get('q'))
		$('search').value = h.get('q');
	$('inverted').checked = h.get('inv') === '1';
	loadTargets().then(() => {
		const row = h.get('t') && document.querySelector(`tr.target[data-id="${+h.get('t')}"]`);
		if (row) {
			state.since = h.get('since');
			state.until = h.get('until');
			select(+h.get('t'), row.children[1].textContent, true);
		}
	});
	setInterval(loadTargets, 5000);
}

function ab() {
	const s = (w) => (w && w[0] ? `${w[0]}..${w[1]}` : 'whole life');
	$('ab').textContent = `A ${state.a ? s(state.a) : '-'} · B ${state.b ? s(state.b) : '-'}`;
	$('compare').disabled = !(state.a && state.b);
}

document.addEventListener('DOMContentLoaded', init);
