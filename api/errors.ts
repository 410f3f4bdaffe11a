/** The JSON envelope of every API error: `{"error": {"type": ..., "message": ...}}`. */
export interface ErrorEnvelope {
  error: { type: string; message: string };
}

/** An error the API answers with its own status and type. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }

  envelope(): ErrorEnvelope {
    return { error: { type: this.type, message: this.message } };
  }
}

/** A request that does not match its schema, or asks for something that cannot be. */
export class InvalidRequestError extends ApiError {
  override name = 'InvalidRequestError';
  constructor(message: string) {
    super(400, 'invalid_request', message);
  }
}

export class BatchNotFoundError extends ApiError {
  override name = 'BatchNotFoundError';
  constructor(batchId: string) {
    super(404, 'not_found', `no batch ${batchId}`);
  }
}

/** The batch is not in a state that allows the request (e.g. cancelling an ended batch). */
export class BatchStateError extends ApiError {
  override name = 'BatchStateError';
  constructor(message: string) {
    super(409, 'conflict', message);
  }
}

/** Group ids that are not finished groups of the batch. */
export class UnknownGroupError extends ApiError {
  override name = 'UnknownGroupError';
  constructor(batchId: string, groupIds: string[]) {
    super(400, 'invalid_request', `not finished groups of batch ${batchId}: ${groupIds.join(', ')}`);
  }
}

/** Trajectory ids that are not rows of the batch's files. */
export class UnknownTrajectoryError extends ApiError {
  override name = 'UnknownTrajectoryError';
  constructor(batchId: string, ids: string[]) {
    super(400, 'invalid_request', `not trajectories of batch ${batchId}: ${ids.slice(0, 20).join(', ')}${ids.length > 20 ? ` (and ${ids.length - 20} more)` : ''}`);
  }
}

/** The gateway failed a forwarded policy call; its status is kept when it is a client error. */
export class GatewayForwardError extends ApiError {
  override name = 'GatewayForwardError';
  constructor(status: number, message: string) {
    super(status >= 400 && status < 500 ? status : 502, status >= 400 && status < 500 ? 'gateway_rejected' : 'gateway_error', message);
  }
}

/** A group file does not match what the manifest recorded (checksum, row count). */
export class CorruptFileError extends ApiError {
  override name = 'CorruptFileError';
  constructor(message: string) {
    super(500, 'internal_error', message);
  }
}

/** Some groups asked for were reported `export_failed`: their rows are not whole. */
export class IncompleteDataError extends ApiError {
  override name = 'IncompleteDataError';
  constructor(message: string) {
    super(409, 'export_failed', message);
  }
}

export class ReportNotFoundError extends ApiError {
  override name = 'ReportNotFoundError';
  constructor(batchId: string, reportId: string) {
    super(404, 'not_found', `no log-prob report ${reportId} of batch ${batchId}`);
  }
}
