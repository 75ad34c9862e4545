// `npm run foxglove -- --hub URL [--port P] [--credential C]`: the Foxglove bridge's command
// (tools/foxglove.ts; docs/tools.md "Foxglove"), run through scripts/run-ts.mjs.
import { ToolError, describe } from './connect.js';
import { main } from './foxglove.js';

main(process.argv.slice(2), process.env).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`foxglove: ${e instanceof ToolError ? e.message : describe(e)}\n`);
    process.exit(e instanceof ToolError ? e.status : 1);
  },
);
