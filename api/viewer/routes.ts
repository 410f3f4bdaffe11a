import type { Client } from '@temporalio/client';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { z } from 'zod';
import type { TextTokenizer } from '../../gateway/codec/index.js';
import type { BatchDataStore, EpisodeStore, SessionStore } from '../../trajectory/index.js';
import { BatchNotFoundError } from '../errors.js';
import type { BatchService } from '../batch-service.js';
import { VIEWER_CSS, VIEWER_ICON, VIEWER_JS } from './assets.js';
import { batchView, episodeTokens, listBatches } from './batch-data.js';
import { episodeChains } from './chains.js';
import { VIEWER_HEADERS } from './headers.js';
import type { Html } from './html.js';
import { batchListPage } from './pages/batch-list.js';
import { batchPage, phasesFragment } from './pages/batch.js';
import { episodePage, turnFragment, turnHref } from './pages/episode.js';
import { errorPage, loginPage } from './pages/login.js';
import { BatchPath, EpisodePath, LoginForm, NoQuery, TurnPath, TurnQuery } from './params.js';
import { PhaseTimes } from './phase-times.js';
import { sameToken } from '../token.js';
import { sessionCookieHeader, sessionValue } from './session-cookie.js';

/** What the viewer reads from the store: batches' episodes and groups, sessions' turns. */
export type ViewerStore = BatchDataStore & EpisodeStore & Pick<SessionStore, 'loadTurns' | 'loadChainReports'>;

export interface ViewerDeps {
  client: Client;
  batches: BatchService;
  store: ViewerStore;
  /** The API token a login must give. */
  token: string;
  /** The model's tokenizer, to show token text; loaded on the first chain shown. */
  tokenizer: () => Promise<TextTokenizer>;
}

/** Largest login form read. */
const LOGIN_BODY_BYTES = 8192;

/** A viewer answer other than 200: an HTML page with the status. */
class ViewerError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function valid<T extends z.ZodType>(schema: T, value: unknown, what: string): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ViewerError(400, `bad ${what}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(value)'} ${i.message}`).join('; ')}`);
  return parsed.data;
}

const sendHtml = (reply: FastifyReply, body: Html, status = 200) => reply.code(status).type('text/html; charset=utf-8').send(body.text);

/** Every page of the trajectory viewer, under /viewer (authentication is the server's onRequest hook). */
export function registerViewer(app: FastifyInstance, deps: ViewerDeps): void {
  const phaseTimes = new PhaseTimes(deps.client);
  let decoder: Promise<(id: number) => string> | undefined;
  const decode = () =>
    (decoder ??= deps.tokenizer().then((tokenizer) => {
      const texts = new Map<number, string>();
      return (id: number) => {
        let text = texts.get(id);
        if (text === undefined) texts.set(id, (text = tokenizer.decode([id])));
        return text;
      };
    }));

  async function episodeOf(batchId: string, episodeId: string) {
    const episode = (await deps.store.listEpisodes(batchId)).find((e) => e.episodeId === episodeId);
    if (!episode) throw new ViewerError(404, `batch ${batchId} has no recorded episode ${episodeId}`);
    return episode;
  }

  app.register(
    async (scope) => {
      scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: LOGIN_BODY_BYTES }, (_request, body, done) =>
        done(null, Object.fromEntries(new URLSearchParams(body as string))),
      );
      scope.addHook('onSend', async (_request, reply) => {
        reply.headers(VIEWER_HEADERS);
      });
      scope.setErrorHandler((error, _request, reply) => {
        const status = error instanceof ViewerError ? error.status : ((error as { statusCode?: number }).statusCode ?? 500);
        return sendHtml(reply, errorPage(status, (error as Error).message), status);
      });
      scope.setNotFoundHandler((request, reply) => sendHtml(reply, errorPage(404, `no page ${request.url}`), 404));

      scope.get('/login', async (_request, reply) => sendHtml(reply, loginPage(false)));
      scope.post('/login', async (request, reply) => {
        const form = valid(LoginForm, request.body, 'login form');
        if (!sameToken(form.token, deps.token)) return sendHtml(reply, loginPage(true), 401);
        return reply.code(303).header('set-cookie', sessionCookieHeader(sessionValue(deps.token))).header('location', '/viewer').send();
      });
      scope.get('/assets/viewer.js', async (_request, reply) => reply.type('text/javascript; charset=utf-8').send(VIEWER_JS));
      scope.get('/assets/icon.svg', async (_request, reply) => reply.type('image/svg+xml').send(VIEWER_ICON));
      scope.get('/assets/viewer.css', async (_request, reply) => reply.type('text/css; charset=utf-8').send(VIEWER_CSS));

      scope.get('', async (request, reply) => {
        valid(NoQuery, request.query, 'query');
        return sendHtml(reply, batchListPage(await listBatches(deps.client, deps.batches)));
      });

      scope.get('/batches/:id', async (request, reply) => {
        const { id } = valid(BatchPath, request.params, 'batch id');
        valid(NoQuery, request.query, 'query');
        const [status, view] = await Promise.all([
          deps.batches.status(id).catch((error: unknown) => {
            if (error instanceof BatchNotFoundError) return 'not_found';
            throw error;
          }),
          batchView(deps.store, id),
        ]);
        if (status === 'not_found' && view.episodes.length === 0) throw new ViewerError(404, `no batch ${id}`);
        const progress = status === 'not_found' ? null : ((await deps.batches.progress(id)) ?? null);
        const tokens = status === 'not_found' ? new Map<string, number>() : await episodeTokens(deps.client, id);
        return sendHtml(reply, batchPage(id, { status: status === 'not_found' ? 'no workflow (store only)' : status, progress }, view, tokens));
      });

      scope.get('/batches/:id/phases', async (request, reply) => {
        const { id } = valid(BatchPath, request.params, 'batch id');
        valid(NoQuery, request.query, 'query');
        const episodes = await deps.store.listEpisodes(id);
        const times = await phaseTimes.of(episodes.map((e) => e.episodeId));
        return sendHtml(reply, phasesFragment(times, episodes.length));
      });

      scope.get('/batches/:id/episodes/:episode', async (request, reply) => {
        const { id, episode: episodeId } = valid(EpisodePath, request.params, 'episode path');
        valid(NoQuery, request.query, 'query');
        const episode = await episodeOf(id, episodeId);
        return sendHtml(reply, episodePage(id, episode, await episodeChains(deps.store, episode)));
      });

      scope.get('/batches/:id/episodes/:episode/chains/:chain/turns/:turn', async (request, reply) => {
        const { id, episode: episodeId, chain: chainIndex, turn } = valid(TurnPath, request.params, 'turn path');
        const { offset } = valid(TurnQuery, request.query, 'query');
        const episode = await episodeOf(id, episodeId);
        const chain = (await episodeChains(deps.store, episode)).find((c) => c.row.chain_index === chainIndex);
        if (!chain || turn >= chain.live.length) throw new ViewerError(404, `episode ${episodeId} has no chain ${chainIndex} turn ${turn}`);
        return sendHtml(reply, turnFragment(turnHref(id, episodeId, chainIndex, turn), chain, turn, offset, await decode()));
      });
    },
    { prefix: '/viewer' },
  );
}
