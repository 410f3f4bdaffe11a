import { z } from 'zod';
import { ErrorAnswer } from './schemas.js';
import type { RouteSpec } from './route.js';

type JsonSchema = { properties?: Record<string, unknown>; required?: string[]; [key: string]: unknown };

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  return rest;
}

function parameters(schema: z.ZodType | undefined, where: 'path' | 'query'): unknown[] {
  if (!schema) return [];
  const json = jsonSchema(schema, 'input');
  return Object.entries(json.properties ?? {}).map(([name, property]) => {
    const { description, ...rest } = property as { description?: string };
    return { name, in: where, required: where === 'path' || (json.required ?? []).includes(name), description, schema: rest };
  });
}

/** The OpenAPI 3.1 document of the routes, generated from the same zod schemas they validate with. */
export function openApiDocument(routes: RouteSpec[], info: { title: string; version: string }): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const error = { description: 'An error, in the JSON envelope', content: { 'application/json': { schema: jsonSchema(ErrorAnswer, 'output') } } };
  for (const route of routes) {
    const path = route.url.replace(/:(\w+)/g, '{$1}');
    const success =
      route.answer instanceof z.ZodType
        ? { description: route.summary, content: { 'application/json': { schema: jsonSchema(route.answer, 'output') } } }
        : { description: route.answer.description, content: { [route.answer.contentType]: { schema: { type: 'string', format: 'binary' } } } };
    (paths[path] ??= {})[route.method.toLowerCase()] = {
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      parameters: [...parameters(route.params, 'path'), ...parameters(route.query, 'query')],
      ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(route.body, 'input') } } } } : {}),
      responses: { [String(route.status ?? 200)]: success, '4XX': error, '5XX': error },
    };
  }
  return { openapi: '3.1.0', info, paths };
}
