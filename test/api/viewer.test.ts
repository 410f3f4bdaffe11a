/**
 * The trajectory viewer on a real stack (Temporal, gateway, worker, SQLite store, engine-sim),
 * driven by headless Chromium: login, the batch list, the batch plots, an episode's chains with
 * their sampled tokens checked against the Arrow export, and a hostile transcript shown as text.
 */
import { request } from 'node:http';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayAdminToken } from '../../stack/secrets.js';
import { startStack, type Stack } from '../../stack/stack.js';
import { episodeRows, type EpisodeRecord, type TrajectoryRow } from '../../trajectory/index.js';
import { sessionInfo } from '../helpers/gateway.js';
import { startTestEngines, testConfig, type TestEngines } from '../helpers/stack.js';
import { streamRows } from '../helpers/arrow.js';

let engines: TestEngines;
let stack: Stack;
let browser: Browser;
const run = Date.now().toString(36);
const batchId = `viewer-${run}`;
const xssBatch = `viewer-xss-${run}`;
const PROBE = '<img src=x onerror="window.__xss=1">';

async function api(route: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${stack.apiUrl}${route}`, { ...init, headers: { authorization: `Bearer ${stack.apiToken}`, 'content-type': 'application/json', ...init.headers } });
}

/** The batch's trajectory rows as the trainer reads them (GET /data, Arrow). */
async function exportedRows(id: string): Promise<TrajectoryRow[]> {
  const bytes = new Uint8Array(await (await api(`/v1/batches/${id}/data`)).arrayBuffer());
  return streamRows(bytes);
}

/** A real gateway session whose user message is a script-injection probe, recorded as an episode. */
async function recordProbeEpisode(): Promise<EpisodeRecord> {
  const admin = { authorization: `Bearer ${gatewayAdminToken(stack.config)}`, 'content-type': 'application/json' };
  const sessionId = `${xssBatch}.s0`;
  const info = sessionInfo({ batchId: xssBatch, groupId: `${xssBatch}.g0`, taskId: 'probe', homeInstance: engines.instances[0]!.name });
  const opened = await fetch(`${stack.gatewayUrl}/admin/v1/sessions`, { method: 'POST', headers: admin, body: JSON.stringify({ sessionId, episodeId: sessionId, attempt: 0, info }) });
  expect(opened.status).toBe(200);
  const { key } = (await opened.json()) as { key: string };
  const chat = async (messages: object[]) => {
    const answer = await fetch(`${stack.gatewayUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages }),
    });
    expect(answer.status).toBe(200);
    return ((await answer.json()) as any).choices[0].message;
  };
  const first = [{ role: 'system', content: 'You are an agent.' }, { role: 'user', content: `Fix this: ${PROBE} </pre></details><script>window.__xss=2</script> ${'and this '.repeat(1500)}` }];
  const reply = await chat(first);
  // The chat template renders the earlier reply's reasoning differently in a later turn: a drift.
  const second = [...first, reply, { role: 'user', content: 'Go on.' }];
  await chat(second);
  // The same call again: the gateway rolls the last answer back and samples anew.
  await chat(second);
  const closed = await fetch(`${stack.gatewayUrl}/admin/v1/sessions/${encodeURIComponent(sessionId)}/close`, { method: 'POST', headers: admin, body: JSON.stringify({ reason: 'stop' }) });
  expect(closed.status).toBe(200);
  const episode: EpisodeRecord = {
    // An id that is itself markup, as a free-text task id can make it.
    episodeId: `${xssBatch}/probe <b>/0`,
    batchId: xssBatch,
    taskId: 'probe',
    groupId: `${xssBatch}.g0`,
    episodeIndex: 0,
    agentName: 'test',
    sessionId,
    outcome: 'ok',
    terminationReason: 'stop',
    reward: 0,
    rewardInfo: { reward: 0, resolved: false, reason: 'unresolved', passed: 0, failed: 1, canaries: 2, tests: { [PROBE]: 'failed' } },
    numTurns: 2,
    numToolCalls: 0,
    tEpisodeS: 1,
    tEnvS: 0,
  };
  // What the episode's close step writes (activities finishEpisode).
  await stack.store.recordEpisode(episode);
  return episode;
}

beforeAll(async () => {
  engines = await startTestEngines({ count: 1 });
  stack = await startStack(testConfig({ engines: engines.instances }));
  const started = await api('/v1/batches', {
    method: 'POST',
    body: JSON.stringify({ batch_id: batchId, task_ids: ['py-roman-numerals-1', 'js-lru-cache-1'], n: 2, concurrency: 4, filter_uniform_groups: false }),
  });
  expect(started.status).toBe(202);
  for (;;) {
    const { status, manifest } = (await (await api(`/v1/batches/${batchId}`)).json()) as { status: string; manifest: unknown };
    if (manifest) break;
    if (status !== 'running') throw new Error(`batch ${batchId} is ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  browser = await puppeteer.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--headless=new'] });
});

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  await engines?.close();
});

async function loggedInPage(errors: string[] = []): Promise<Page> {
  const page = await browser.newPage();
  page.on('pageerror', (e) => errors.push(String(e)));
  // A blocked inline script or style (the CSP), or a resource refused, shows here as a console error.
  page.on('console', (m) => (m.type() === 'error' ? errors.push(m.text()) : undefined));
  await page.goto(`${stack.apiUrl}/viewer/login`);
  await page.type('input[name=token]', stack.apiToken);
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  return page;
}

/** Opens every turn of the page and every "more" page of tokens, waiting for each fragment; how many "more" pages it loaded. */
async function openAllTurns(page: Page): Promise<number> {
  let pages = 0;
  await page.$$eval('details.turn > summary', (summaries) => summaries.forEach((s) => (s as HTMLElement).click()));
  await page.waitForFunction(() => [...document.querySelectorAll('details.turn')].every((d) => (d as HTMLElement).dataset.loaded === 'yes'));
  for (;;) {
    const more = await page.$('button[data-more]:not([disabled])');
    if (!more) return pages;
    pages++;
    await more.click();
    await page.waitForFunction(() => !document.querySelector('button[data-more][disabled]'));
  }
}

describe('the trajectory viewer', () => {
  it('logs in with the token and lists the batch with its progress', async () => {
    const page = await loggedInPage();
    expect(new URL(page.url()).pathname).toBe('/viewer');
    const row = await page.$eval(`tr[data-batch="${batchId}"]`, (tr) => ({
      text: tr.textContent,
      done: tr.querySelector('[data-done]')?.getAttribute('data-done'),
      failed: tr.querySelector('[data-failed]')?.getAttribute('data-failed'),
    }));
    expect(row.text).toContain('completed');
    expect(row.done).toBe('4');
    expect(row.failed).toBe('0');
    await page.close();
  });

  it('plots one point per episode and one bar per termination reason, and times the phases', async () => {
    const episodes = await stack.store.listEpisodes(batchId);
    expect(episodes.length).toBe(4);
    const errors: string[] = [];
    const page = await loggedInPage(errors);
    await page.goto(`${stack.apiUrl}/viewer/batches/${batchId}`);
    const count = (plot: string, mark: string) => page.$$eval(`svg[data-plot="${plot}"] ${mark}`, (els) => els.length);
    expect(await count('reward', 'circle[data-point]')).toBe(episodes.length);
    expect(await count('turns-tokens', 'circle[data-point]')).toBe(episodes.length);
    const rewards = await page.$$eval('svg[data-plot="reward"] circle[data-point]', (els) => els.map((e) => [e.getAttribute('data-key'), Number(e.getAttribute('data-x'))]));
    expect(new Map(rewards as [string, number][])).toEqual(new Map(episodes.map((e) => [e.episodeId, e.reward])));
    const turns = await page.$$eval('svg[data-plot="turns-tokens"] circle[data-point]', (els) => els.map((e) => [e.getAttribute('data-key'), Number(e.getAttribute('data-x')), Number(e.getAttribute('data-y'))]));
    for (const [key, x, y] of turns as [string, number, number][]) {
      expect(x).toBe(episodes.find((e) => e.episodeId === key)!.numTurns);
      expect(y).toBeGreaterThan(0);
    }
    const reasons = await page.$$eval('svg[data-plot="termination"] rect[data-bar]', (els) => els.map((e) => Number(e.getAttribute('data-value'))));
    expect(reasons.reduce((a, b) => a + b, 0)).toBe(episodes.length);
    expect(await count('groups', 'rect[data-bar]')).toBe(1);
    await page.waitForSelector('svg[data-plot="phases"]');
    const phases = await page.$$eval('svg[data-plot="phases"] rect[data-bar]', (els) => Object.fromEntries(els.map((e) => [e.getAttribute('data-label'), Number(e.getAttribute('data-value'))])));
    expect(Object.keys(phases)).toEqual(['admission', 'sandbox', 'agent', 'reward']);
    expect(phases.agent).toBeGreaterThan(0);
    expect(phases.sandbox).toBeGreaterThan(0);
    expect(await page.$eval('[data-phase-episodes]', (e) => e.getAttribute('data-phase-episodes'))).toBe('4');
    expect(errors).toEqual([]);
    await page.close();
  });

  it("highlights exactly the chain's loss_mask tokens, with their log-probs, and shows the reward evidence", async () => {
    const rows = await exportedRows(batchId);
    const row = rows.find((r) => r.num_turns > 1) ?? rows[0]!;
    const errors: string[] = [];
    const page = await loggedInPage(errors);
    const answer = await page.goto(`${stack.apiUrl}/viewer/batches/${batchId}/episodes/${encodeURIComponent(row.episode_id)}`);
    expect(answer?.status(), await answer?.text()).toBe(200);
    const recorded = (await stack.store.listEpisodes(batchId)).find((e) => e.episodeId === row.episode_id)!;
    expect(typeof recorded.rewardInfo.canaries).toBe('number');
    expect(await page.$eval('[data-evidence]', (e) => e.textContent)).toContain(`canaries ${recorded.rewardInfo.canaries}`);
    const tests = Object.entries(recorded.rewardInfo.tests as Record<string, string>);
    expect(tests.length).toBe(Math.min(50, (recorded.rewardInfo.passed as number) + (recorded.rewardInfo.failed as number)));
    expect(await page.$$eval('[data-evidence] tr[data-test]', (els) => els.length)).toBe(tests.length);
    await openAllTurns(page);
    const chain = `section[data-chain="${row.chain_index}"]`;
    const sampled = await page.$$eval(`${chain} .tok.sampled`, (els) => els.map((e) => e.getAttribute('title')!));
    expect(sampled.length).toBe(row.loss_mask.reduce((a, b) => a + b, 0));
    expect(await page.$$eval(`${chain} .tok`, (els) => els.length)).toBe(row.input_ids.length);
    // The hover text of each sampled token names its position and the log-prob the export holds.
    const positions = row.loss_mask.flatMap((m, i) => (m === 1 ? [i] : []));
    sampled.forEach((title, k) => expect(title).toContain(`#${positions[k]} id ${row.input_ids[positions[k]!]} logprob ${row.logprobs[positions[k]!]!.toFixed(4)}`));
    expect(await page.$$eval(`${chain} details.turn`, (els) => els.length)).toBe(row.num_turns);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('shows a hostile transcript as text: no element, no script run', async () => {
    const episode = await recordProbeEpisode();
    const errors: string[] = [];
    const page = await loggedInPage(errors);
    await page.goto(`${stack.apiUrl}/viewer/batches/${xssBatch}/episodes/${encodeURIComponent(episode.episodeId)}`);
    // The long first message makes the first turn longer than a page of tokens.
    expect(await openAllTurns(page)).toBeGreaterThan(0);
    const text = await page.$eval('main', (m) => m.textContent);
    expect(text).toContain(PROBE);
    expect(text).toContain('<script>window.__xss=2</script>');
    expect(await page.$$eval('main img, main script', (els) => els.length)).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(errors).toEqual([]);
    // Rollbacks and the template drift are marked where the store's rows (the export's derivation) put them.
    const [row] = await episodeRows(stack.store, [episode]);
    expect(row!.num_rollbacks).toBe(1);
    expect(await page.$$eval('[data-rollback]', (els) => els.length)).toBe(row!.num_rollbacks);
    expect(row!.template_drift_offset).toBeGreaterThanOrEqual(0);
    expect(await page.$$eval('.tok.drift', (els) => els.length)).toBe(1);
    const tokens = await page.$$eval('section[data-chain] .tok', (els) => els.map((e) => e.classList.contains('drift')));
    expect(tokens.indexOf(true)).toBe(row!.template_drift_offset);
    expect(await page.$$eval('section[data-chain] .tok.sampled', (els) => els.length)).toBe(row!.loss_mask.reduce((a, b) => a + b, 0));
    // The store-only batch (no workflow) still has its page.
    await page.goto(`${stack.apiUrl}/viewer/batches/${xssBatch}`);
    expect(await page.$$eval('svg[data-plot="reward"] circle[data-point]', (els) => els.length)).toBe(1);
    await page.close();
  });

  it('answers 401 without a session or token, keeps the cookie to the viewer, and 400 on bad ids', async () => {
    const page = await fetch(`${stack.apiUrl}/viewer`);
    expect(page.status).toBe(401);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect((await fetch(`${stack.apiUrl}/viewer/batches/${batchId}`, { headers: { cookie: 'rollout_viewer=9999999999.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } })).status).toBe(401);
    const form = (token: string) => fetch(`${stack.apiUrl}/viewer/login`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token }) });
    expect((await form('wrong')).status).toBe(401);
    const login = await form(stack.apiToken);
    expect(login.status).toBe(303);
    const setCookie = login.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).not.toContain(stack.apiToken);
    const cookie = setCookie.split(';')[0]!;
    const get = (route: string) => fetch(`${stack.apiUrl}${route}`, { headers: { cookie } });
    expect((await get('/viewer')).status).toBe(200);
    // The cookie opens the viewer only: the API proper still wants the bearer token.
    expect((await get(`/v1/batches/${batchId}`)).status).toBe(401);
    // Nor through dot segments a browser would have resolved (sent raw, as a hostile client can).
    for (const raw of [`/viewer/../v1/batches/${batchId}`, `/viewer/%2e%2e/v1/batches/${batchId}`]) {
      const status = await new Promise<number>((resolve, reject) =>
        request({ host: new URL(stack.apiUrl).hostname, port: new URL(stack.apiUrl).port, path: raw, headers: { cookie } }, (answer) => resolve(answer.resume().statusCode!))
          .on('error', reject)
          .end(),
      );
      // The viewer's own "no page" 404: the route was never the API's.
      expect(status, raw).toBe(404);
    }
    const episodeId = encodeURIComponent((await stack.store.listEpisodes(batchId))[0]!.episodeId);
    const turn = `/viewer/batches/${batchId}/episodes/${episodeId}/chains/0/turns/0`;
    const t0 = await get(turn);
    expect(t0.status, await t0.text()).toBe(200);
    for (const bad of [
      '/viewer/batches/bad..id',
      '/viewer/batches/-x',
      `/viewer/batches/${batchId}/episodes/a%0Ab`,
      `/viewer/batches/${batchId}/episodes/${episodeId}/chains/-1/turns/0`,
      `/viewer/batches/${batchId}/episodes/${episodeId}/chains/0/turns/x`,
      `${turn}?offset=-5`,
      `${turn}?offset=99999999999`,
      `${turn}?other=1`,
      `/viewer/batches/${batchId}?x=1`,
    ]) {
      expect((await get(bad)).status, bad).toBe(400);
    }
    expect((await get(`/viewer/batches/${batchId}/episodes/${episodeId}/chains/0/turns/9999`)).status).toBe(404);
    expect((await get(`/viewer/batches/nothing-${run}`)).status).toBe(404);
    expect((await fetch(`${stack.apiUrl}/viewer/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'token=a&extra=b' })).status).toBe(400);
  });
});
