/** Errors a protocol maps to its own envelope. `status` is the HTTP status to answer with. */
export class GatewayError extends Error {
  override name = 'GatewayError';
  constructor(
    message: string,
    readonly status: number,
    readonly type: string,
  ) {
    super(message);
  }
}

export class UnknownSessionError extends GatewayError {
  override name = 'UnknownSessionError';
  constructor() {
    super('unknown or closed session key', 401, 'authentication_error');
  }
}

export class InvalidRequestError extends GatewayError {
  override name = 'InvalidRequestError';
  constructor(message: string) {
    super(message, 400, 'invalid_request_error');
  }
}

/**
 * The session's state here is stale or its owner cannot be reached for now: the client retries
 * (a 503), and the retry is served from the store by whichever replica owns the session then.
 */
export class SessionMovedError extends GatewayError {
  override name = 'SessionMovedError';
  constructor(message: string) {
    super(`session moved to another gateway replica, retry: ${message}`, 503, 'server_error');
  }
}
