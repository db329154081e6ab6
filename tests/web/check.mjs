// SPDX-License-Identifier: GPL-2.0-only
// Drives Debian's Chromium (playwright-core, no browser of its own) against pcmond's page
// for tests/integration/test_web.py: node check.mjs BASE TARGET XSS_TARGET SHOT_DIR
// [OTHER_TARGET...]. Prints
// one JSON line of what the page showed; the test compares it with pcmon's own answers.
import { chromium } from 'playwright-core';

const [base, target, xss, shots, ...others] = process.argv.slice(2);
const out = { errors: [] };
const browser = await chromium.launch({
	executablePath: '/usr/bin/chromium',
	args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
	       '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
	const page = await browser.newPage({ viewport: { width: 1300, height: 1000 } });
	page.on('console', (m) => { if (m.type() === 'error') out.errors.push(m.text()); });
	page.on('pageerror', (e) => out.errors.push(String(e)));
	const ready = async () => {
		await page.waitForFunction(() => document.body.getAttribute('data-ready') === '1');
		await page.evaluate(() => document.body.removeAttribute('data-ready'));
	};

	// 1. the whole life: the outermost frame of each procedure, and a search
	await page.goto(`${base}/#t=${target}`);
	await ready();
	out.total = +(await page.getAttribute('#flame svg', 'data-total'));
	out.frames = await page.$$eval('#flame g.f', (gs) => {
		const first = {};
		for (const g of gs)
			if (!(g.dataset.name in first))
				first[g.dataset.name] = +g.dataset.v;
		return first;
	});
	await page.fill('#search', '^alpha$');
	out.matched = +(await page.getAttribute('#matched', 'data-matched'));
	// zoom on a frame, and back; callers; a column sorted
	await page.click('#flame g.f[data-name="handle"]');
	out.zoomed_total = +(await page.getAttribute('#flame svg', 'data-total'));
	await page.click('#reset');
	out.reset_total = +(await page.getAttribute('#flame svg', 'data-total'));
	await page.check('#inverted');
	await ready();
	out.inverted_top = await page.$$eval('#flame g.f[data-d="1"]', (gs) =>
		Object.fromEntries(gs.map((g) => [g.dataset.name, +g.dataset.v])));
	await page.uncheck('#inverted');
	await ready();
	await page.click('#listing th:nth-child(2)'); /* shallow: largest first */
	out.sorted_first = await page.getAttribute('#listing tr[data-name]', 'data-name');
	out.legend = await page.$$eval('#timeline polyline', (ps) => ps.map((p) => p.dataset.name));
	await page.click('#listing tr[data-name="alpha"]');
	await page.waitForSelector('#linetable');
	out.lines_count = +(await page.getAttribute('#linetable', 'data-count'));
	out.lines_sum = await page.$$eval('#linetable tr[data-count]',
					  (rs) => rs.reduce((a, r) => a + +r.dataset.count, 0));
	await page.screenshot({ path: `${shots}/web-flame.png` });

	// 2. a window dragged on the timeline: A the first half, B the second; their diff
	const box = await (await page.$('#timeline svg')).boundingBox();
	const drag = async (from, to) => {
		await page.mouse.move(box.x + box.width * from, box.y + box.height / 3);
		await page.mouse.down();
		await page.mouse.move(box.x + box.width * to, box.y + box.height / 3, { steps: 5 });
		await page.mouse.up();
		await ready();
		return [await page.getAttribute('#main', 'data-since'),
			await page.getAttribute('#main', 'data-until')];
	};
	out.a = await drag(0.02, 0.47);
	out.window_total = +(await page.getAttribute('#flame svg', 'data-total'));
	await page.click('#setA');
	out.b = await drag(0.53, 0.98);
	await page.click('#setB');
	await page.click('#compare');
	await page.waitForSelector('#diff tr[data-name]');
	out.diff = await page.$$eval('#diff tr[data-name]', (rs) =>
		Object.fromEntries(rs.map((r) => [r.dataset.name, r.dataset.change])));
	out.diff_frames = await page.$$eval('#flame g.f', (gs) => Object.fromEntries(
		gs.map((g) => [g.dataset.name, g.classList.contains('grew') ? 'grew'
			: g.classList.contains('shrank') ? 'shrank' : 'same'])));
	await page.screenshot({ path: `${shots}/web-diff.png` });

	// 3. a procedure whose name is markup shows as text
	if (xss) {
		await page.goto(`${base}/#t=${xss}`);
		await page.reload();
		await ready();
		out.xss_names = await page.$$eval('#flame g.f', (gs) => gs.map((g) => g.dataset.name));
		out.xss_imgs = await page.$$eval('img', (is) => is.length);
		out.pwned = await page.evaluate(() => window.pwned === 1);
	}
	// 4. what other instruments list: each of their tables, by section
	out.sections = {};
	for (const other of others) {
		await page.goto(`${base}/#t=${other}`);
		await page.reload();
		await ready();
		out.sections[other] = await page.$$eval('#extras table[data-section]', (ts) =>
			Object.fromEntries(ts.map((t) => [t.dataset.section,
				Array.from(t.querySelectorAll('tr')).slice(1).map((r) => r.cells[0].textContent)])));
	}
} catch (e) {
	out.errors.push('check.mjs: ' + String(e));
} finally {
	await browser.close();
}
console.log(JSON.stringify(out));
