import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorPage } from './pages/login.js';
import { VIEWER_HEADERS } from './headers.js';
import { cookieOf, SESSION_COOKIE, validSession } from './session-cookie.js';

/** Open without a session: the login form and its post, and the static script, styles and icon (no data). */
const OPEN_VIEWER_PATHS = new Set(['/viewer/login', '/viewer/assets/viewer.js', '/viewer/assets/viewer.css', '/viewer/assets/icon.svg']);
export const isViewerOpen = (path: string): boolean => OPEN_VIEWER_PATHS.has(path);

/** Paths the viewer's session cookie is accepted on; every other route still needs the bearer token. */
export const isViewerPath = (path: string): boolean => path === '/viewer' || path.startsWith('/viewer/');

/** A viewer request without a bearer token passes with a valid session cookie, else gets a 401 page. */
export function viewerDenied(request: FastifyRequest, reply: FastifyReply, token: string): FastifyReply | undefined {
  if (validSession(cookieOf(request.headers.cookie, SESSION_COOKIE), token)) return undefined;
  return reply.code(401).headers(VIEWER_HEADERS).type('text/html; charset=utf-8').send(errorPage(401, 'Log in with the API token first.').text);
}
