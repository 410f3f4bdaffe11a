/**
 * Batch and group ids become workflow ids, directory and object names, and URL path segments, so
 * only a safe charset is accepted wherever one comes in (the API, the CLI, a workflow started by
 * name): no `/`, no `..`, bounded length.
 */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

export const ID_RULE = 'letters, digits, ".", "_" and "-", at most 200, starting with a letter or digit, no ".."';

/** Whether `id` is a safe batch or group id. */
export function isSafeId(id: unknown): id is string {
  return typeof id === 'string' && ID_PATTERN.test(id) && !id.includes('..');
}
