import type { Backend, BackendKind } from './backend.js';
import { SglangBackend } from './sglang.js';
import { VllmBackend } from './vllm.js';

/** Where an engine instance is and which API it speaks. */
export interface BackendInstance {
  kind: BackendKind;
  /** Base URL, e.g. `http://127.0.0.1:8000`. */
  url: string;
}

/** The backend for an engine instance's API. `modelName` is the served model (vLLM checks it). */
export function createBackend(instance: BackendInstance, modelName: string): Backend {
  switch (instance.kind) {
    case 'vllm':
      return new VllmBackend({ url: instance.url, model: modelName });
    case 'sglang':
      return new SglangBackend({ url: instance.url });
  }
}
