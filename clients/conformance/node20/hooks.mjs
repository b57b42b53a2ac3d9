// Resolve hook: `fs` imported from inside @modelcontextprotocol/conformance resolves to
// ./fs.mjs; every other import is untouched.
const shim = new URL('./fs.mjs', import.meta.url).href;

export async function resolve(specifier, context, next) {
  const fromSuite = context.parentURL?.includes('/@modelcontextprotocol/conformance/');
  if ((specifier === 'fs' || specifier === 'node:fs') && fromSuite) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}
