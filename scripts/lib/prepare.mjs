// What `npm test` needs beyond `npm ci`, checked (and installed where it can be)
// before any suite runs, so that nothing is skipped silently.
import { xsnapWorkerPath } from './xsnap.mjs';

export async function prepareEnvironment() {
  const notes = [];
  const extraChecks = [];
  notes.push(`XS engine: ${xsnapWorkerPath()}`);
  return { notes, extraChecks };
}
