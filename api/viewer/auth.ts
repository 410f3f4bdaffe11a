import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorPage } from './pages/login.js';
import { VIEWER_HEADERS } from './headers.js';
import { cookieOf, SESSION_COOKIE, validSession } from './session-cookie.js';

/** The login form and its post: the only viewer paths open without a session. */
export const isViewerLogin = (path: string): boolean => path === '/viewer/login';

/** Paths the viewer's session cookie is accepted on; every other route still needs the bearer token. */
export const isViewerPath = (path: string): boolean => path === '/viewer' || path.startsWith('/viewer/');

/** A viewer request without a bearer token passes with a valid session cookie, else gets a 401 page. */
export function viewerDenied(request: FastifyRequest, reply: FastifyReply, token: string): FastifyReply | undefined {
  if (validSession(cookieOf(request.headers.cookie, SESSION_COOKIE), token)) return undefined;
  return reply.code(401).headers(VIEWER_HEADERS).type('text/html; charset=utf-8').send(errorPage(401, 'Log in with the API token first.').text);
}
