// `node --import` this to run as on a platform without the `tokenizers` binary: importing the
// module fails the way a missing package does.
import { register } from 'node:module';

register(
  'data:text/javascript,' +
    encodeURIComponent(`export async function resolve(specifier, context, next) {
  if (specifier === 'tokenizers') throw Object.assign(new Error("Cannot find module 'tokenizers'"), { code: 'ERR_MODULE_NOT_FOUND' });
  return next(specifier, context);
}`),
);
