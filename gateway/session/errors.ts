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
