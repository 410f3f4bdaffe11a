import { createHmac } from 'node:crypto';
import { sameToken } from '../token.js';

/** Name of the viewer's session cookie. */
export const SESSION_COOKIE = 'rollout_viewer';
/** How long a viewer login lasts: 12 hours. */
export const SESSION_TTL_S = 12 * 3600;

function mac(token: string, expiresAt: number): string {
  return createHmac('sha256', token).update(`agent-rollout viewer session ${expiresAt}`).digest('base64url');
}

/**
 * The cookie value of a login at `now`: its expiry and an HMAC of it keyed by the API token, so
 * the raw token never sits in the browser and changing the token ends every session.
 */
export function sessionValue(token: string, now = Date.now()): string {
  const expiresAt = Math.floor(now / 1000) + SESSION_TTL_S;
  return `${expiresAt}.${mac(token, expiresAt)}`;
}

export function validSession(value: string | undefined, token: string, now = Date.now()): boolean {
  const match = /^(\d{1,12})\.([\w-]{43})$/.exec(value ?? '');
  if (!match) return false;
  const expiresAt = Number(match[1]);
  if (expiresAt * 1000 <= now) return false;
  return sameToken(match[2]!, mac(token, expiresAt));
}

/** The named cookie of a `Cookie` header, or undefined. */
export function cookieOf(header: string | undefined, name: string): string | undefined {
  for (const pair of (header ?? '').split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim();
  }
  return undefined;
}

export function sessionCookieHeader(value: string): string {
  return `${SESSION_COOKIE}=${value}; Path=/viewer; HttpOnly; SameSite=Strict; Max-Age=${SESSION_TTL_S}`;
}
