import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { disconnectSignal } from '../auth.js';
import { SessionMovedError } from '../session/errors.js';
import type { SessionOwnership } from '../session/ownership.js';
import type { SessionLocation } from '../session/session-manager.js';
import { FORWARDED_BY_HEADER, forwardRequest } from './forward.js';
import type { ReplicaRegistration } from './registration.js';

export interface SessionAffinityDeps {
  ownership: SessionOwnership;
  registration: ReplicaRegistration;
  log(line: string): void;
}

/**
 * A `preParsing` hook that serves a session's requests where the session lives, so an unmodified
 * agent may call any replica: a request for a session another live replica owns is forwarded to
 * it untouched; when that owner cannot be reached, this replica waits for its claim to lapse and
 * takes the session over from the store, then serves the request itself. `locate` says where the
 * request's session is (undefined: a request without a session, served here as before).
 */
export function sessionAffinity(deps: SessionAffinityDeps, locate: (request: FastifyRequest) => Promise<SessionLocation> | undefined) {
  return async (request: FastifyRequest, reply: FastifyReply, payload: Readable): Promise<Readable | undefined> => {
    const location = await locate(request);
    if (!location || location.kind === 'here') return payload;
    const { sessionId, owner } = location;
    // The owner changed while the request travelled: the client's retry finds the new one.
    if (request.headers[FORWARDED_BY_HEADER] !== undefined) throw new SessionMovedError(`session ${sessionId} is owned by ${owner}`);
    let body = payload;
    const address = await deps.registration.addressOf(owner);
    // A second try on a new connection: an idle keep-alive socket the owner just closed is no outage.
    if (address) {
      for (const fresh of [false, true]) {
        const outcome = await forwardRequest(request, reply, body, { url: address, via: deps.registration.id, fresh });
        if (outcome.kind === 'answered') return undefined;
        body = outcome.body;
        if (fresh) deps.log(`owner ${owner} of session ${sessionId} is unreachable (${outcome.error.message}): taking the session over`);
      }
    }
    if (!(await deps.ownership.takeOver(sessionId, disconnectSignal(reply)))) {
      throw new SessionMovedError(`session ${sessionId} is still owned by ${owner}`);
    }
    return body;
  };
}
