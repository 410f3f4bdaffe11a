import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import type { Engine, PauseMode } from './engine.js';

/**
 * The weight version an engine serves, as SGLang keeps it: a label (`weight_version`, SGLang's
 * default `"default"`) that a weight update sets. A simulated update that names no version counts
 * up instead: `"default"` becomes `"1"`, `"7"` becomes `"8"`, so tests can watch a version counter.
 */
export class WeightVersion {
  constructor(private current: string) {}

  get value(): string {
    return this.current;
  }

  /** Sets the label, or counts up when none is given. */
  update(next: string | undefined): string {
    this.current = next ?? (/^\d+$/.test(this.current) ? String(Number(this.current) + 1) : '1');
    return this.current;
  }
}

/** vLLM's `/pause` query: `mode`, or the deprecated `wait_for_inflight_requests`. */
const VllmPauseQuery = z.object({
  mode: z.enum(['abort', 'wait', 'keep']).optional(),
  wait_for_inflight_requests: z.enum(['true', 'false']).optional(),
  clear_cache: z.enum(['true', 'false']).optional(),
});
/** vLLM's `/update_weights` body; `update_info` depends on the transfer backend, so any object goes. */
const VllmUpdateWeights = z.object({
  update_info: z.looseObject({ weight_version: z.union([z.string(), z.number().int()]).nullish() }),
});
/** SGLang's `PauseGenerationReqInput`. */
const SglangPause = z.object({ mode: z.enum(['abort', 'retract', 'in_place']).default('abort') });
/** SGLang's `UpdateWeightFromDiskReqInput` (the fields the simulator reads). */
const SglangUpdateFromDisk = z.object({
  model_path: z.string().min(1),
  weight_version: z.string().nullish(),
  abort_all_requests: z.boolean().default(false),
});
/** SGLang's `UpdateWeightVersionReqInput`. */
const SglangUpdateVersion = z.object({
  new_version: z.string().min(1),
  abort_all_requests: z.boolean().default(false),
});

/** SGLang's `retract` and `in_place` both keep the running requests for after the pause. */
const SGLANG_PAUSE_MODES: Record<z.output<typeof SglangPause>['mode'], PauseMode> = {
  abort: 'abort',
  retract: 'keep',
  in_place: 'keep',
};

function badRequest(reply: FastifyReply, error: z.ZodError) {
  const issue = error.issues[0]!;
  const where = issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  return reply.status(400).send({ error: { message: `${where}${issue.message}` } });
}

/**
 * The weight-update control routes of both engines, on one engine and one version:
 * - vLLM (served with `VLLM_SERVER_DEV_MODE=1`): `POST /pause?mode=abort|wait|keep`, `POST /resume`,
 *   `GET /is_paused`, `POST /update_weights {update_info}`. A simulated `update_info.weight_version`
 *   sets the version; vLLM itself keeps none, so the simulator reports it in an `x-weight-version`
 *   response header of completions.
 * - SGLang: `POST /pause_generation {mode}`, `POST /continue_generation`,
 *   `POST /update_weights_from_disk {model_path, weight_version?}`,
 *   `POST /update_weight_version {new_version}`, `GET /get_weight_version`; generations report the
 *   version in `meta_info.weight_version`.
 */
export function registerWeightRoutes(app: FastifyInstance, engine: Engine, version: WeightVersion): void {
  /** SGLang's `abort_all_requests` flag of a weight update. */
  const abortAll = (abort: boolean) => {
    if (abort) engine.abortAll();
  };

  app.post('/pause', async (req, reply) => {
    const query = VllmPauseQuery.safeParse(req.query ?? {});
    if (!query.success) return badRequest(reply, query.error);
    const mode = query.data.mode ?? (query.data.wait_for_inflight_requests === 'true' ? 'wait' : 'abort');
    await engine.pause(mode);
    return { status: 'paused' };
  });
  app.post('/resume', async () => {
    engine.resume();
    return { status: 'resumed' };
  });
  app.get('/is_paused', async () => ({ is_paused: engine.isPaused }));
  app.post('/update_weights', async (req, reply) => {
    const body = VllmUpdateWeights.safeParse(req.body);
    if (!body.success) return badRequest(reply, body.error);
    const given = body.data.update_info.weight_version;
    version.update(given === null || given === undefined ? undefined : String(given));
    return { message: 'Weights updated' };
  });

  app.post('/pause_generation', async (req, reply) => {
    const body = SglangPause.safeParse(req.body ?? {});
    if (!body.success) return badRequest(reply, body.error);
    await engine.pause(SGLANG_PAUSE_MODES[body.data.mode]);
    return { message: 'Generation paused successfully.', status: 'ok' };
  });
  app.post('/continue_generation', async () => {
    engine.resume();
    return { message: 'Generation continued successfully.', status: 'ok' };
  });
  app.post('/update_weights_from_disk', async (req, reply) => {
    const body = SglangUpdateFromDisk.safeParse(req.body);
    if (!body.success) return badRequest(reply, body.error);
    abortAll(body.data.abort_all_requests);
    version.update(body.data.weight_version ?? undefined);
    return { success: true, message: 'Succeeded to update model weights.', num_paused_requests: 0 };
  });
  app.post('/update_weight_version', async (req, reply) => {
    const body = SglangUpdateVersion.safeParse(req.body);
    if (!body.success) return badRequest(reply, body.error);
    abortAll(body.data.abort_all_requests);
    const next = version.update(body.data.new_version);
    return { success: true, message: `Weight version updated to ${next}`, new_version: next };
  });
  app.get('/get_weight_version', async () => ({ weight_version: version.value }));
}
