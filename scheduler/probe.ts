/** The timeout of a probe or call ran out: the engine did not answer in time. */
export class ProbeTimeoutError extends Error {
  override name = 'ProbeTimeoutError';
}

/** How a health check ended: a real failure (refused, reset, an error answer) or a timeout. */
export type ProbeOutcome = 'passed' | 'failed' | 'timedOut';

export interface StallAwareTimeoutOptions {
  /** Time the engine has to answer, ms. */
  timeoutMs: number;
  /** A timer that fires this much later than due found the event loop stalled, ms. */
  stallMs: number;
  /** Times a stalled timeout is extended by another `timeoutMs` before it aborts anyway. */
  maxExtensions: number;
}

/**
 * An abort signal for a timeout that does not run out while the event loop is stalled: when its
 * timer fires late (a busy loop held it), the answer may be sitting unread in the socket, so it is
 * extended by another `timeoutMs` (the poll phase after the timers reads it), up to `maxExtensions`
 * times. `cancel` clears it once the probe is done.
 */
export function stallAwareTimeout(options: StallAwareTimeoutOptions): {
  signal: AbortSignal;
  cancel(): void;
} {
  const controller = new AbortController();
  let extensions = 0;
  let timer: NodeJS.Timeout;
  const arm = () => {
    const due = performance.now() + options.timeoutMs;
    timer = setTimeout(() => {
      const stalled = performance.now() - due > options.stallMs;
      if (stalled && extensions < options.maxExtensions) {
        extensions += 1;
        arm();
      } else
        controller.abort(
          new ProbeTimeoutError(
            `no answer within ${options.timeoutMs} ms (${extensions} extensions for a stalled event loop)`,
          ),
        );
    }, options.timeoutMs);
    timer.unref();
  };
  arm();
  return { signal: controller.signal, cancel: () => clearTimeout(timer) };
}

/** `GET url` under a stall-aware timeout: passed on a 2xx answer, timed out, or failed otherwise. */
export async function probeHealth(
  url: string,
  timeout: StallAwareTimeoutOptions,
): Promise<ProbeOutcome> {
  const { signal, cancel } = stallAwareTimeout(timeout);
  try {
    const response = await fetch(url, { signal });
    await response.arrayBuffer();
    return response.ok ? 'passed' : 'failed';
  } catch {
    return signal.aborted ? 'timedOut' : 'failed';
  } finally {
    cancel();
  }
}

/** undici's codes for a connect, headers or body timeout (Node's fetch). */
const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);

/**
 * Whether an error, or one of its causes, is a timeout (the engine was slow to answer) rather
 * than a refused or reset connection or an error answer (the engine is down or failing).
 */
export function isTimeout(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth += 1) {
    if (e.name === 'TimeoutError' || e instanceof ProbeTimeoutError) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && TIMEOUT_CODES.has(code)) return true;
  }
  return false;
}
