// Node 20 lacks fs.globSync, which the MCP conformance suite's build imports from `fs`.
// This registers a resolve hook that hands the suite (and only the suite) a `fs`
// that is Node's own plus the `glob` package's globSync, the same function.
// Used as: node --import ./clients/conformance/node20/register.mjs <suite>
import { register } from 'node:module';

register(new URL('./hooks.mjs', import.meta.url));
