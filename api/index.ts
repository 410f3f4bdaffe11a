export { buildApiServer, type ApiDeps } from './server.js';
export { ApiError, BatchNotFoundError, BatchStateError, InvalidRequestError } from './errors.js';
