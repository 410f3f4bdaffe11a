import { describe, expect, it } from 'vitest';
import { cookieOf, SESSION_TTL_S, sessionValue, validSession } from '../../api/viewer/session-cookie.js';

describe("the viewer's session cookie", () => {
  const token = 'the-api-token';
  const now = Date.UTC(2026, 0, 1);
  const value = sessionValue(token, now);

  it('holds an expiry and an HMAC, never the token', () => {
    expect(value).toMatch(/^\d+\.[\w-]{43}$/);
    expect(value).not.toContain(token);
    expect(validSession(value, token, now + 1000)).toBe(true);
  });

  it('lapses after its lifetime and dies with a changed token', () => {
    expect(validSession(value, token, now + SESSION_TTL_S * 1000 - 1000)).toBe(true);
    expect(validSession(value, token, now + SESSION_TTL_S * 1000 + 1000)).toBe(false);
    expect(validSession(value, 'another-token', now + 1000)).toBe(false);
  });

  it('refuses a forged expiry, a tampered mac and malformed values', () => {
    const [expiry, mac] = value.split('.');
    expect(validSession(`${Number(expiry) + 3600}.${mac}`, token, now)).toBe(false);
    expect(validSession(`${expiry}.${mac!.slice(0, -1)}${mac!.endsWith('A') ? 'B' : 'A'}`, token, now)).toBe(false);
    for (const bad of [undefined, '', token, `${expiry}`, `${expiry}.${mac}.x`, `-1.${mac}`]) expect(validSession(bad, token, now)).toBe(false);
  });

  it('is read from a Cookie header among others', () => {
    expect(cookieOf(`a=1; rollout_viewer=${value}; b=2`, 'rollout_viewer')).toBe(value);
    expect(cookieOf('a=1', 'rollout_viewer')).toBeUndefined();
    expect(cookieOf(undefined, 'rollout_viewer')).toBeUndefined();
  });
});
