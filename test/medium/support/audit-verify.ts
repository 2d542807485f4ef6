import path from 'node:path';
import type { EnvSource } from '@dlock/config/env';
import { REPO_ROOT, runNode, type NodeRun } from '@dlock/testing';
import { auditVerify } from '../../../scripts/audit-verify';

/**
 * `npm run audit:verify` two ways (docs/audit.md): its verifier in the test's
 * own process, for the many checks of what it finds, and the real command, a
 * node process of the build (`node scripts/build.js` first), where its exit
 * code and printed report are what a test checks.
 */
export async function verifyInProcess(env: EnvSource, args: string[] = []): Promise<NodeRun> {
  let out = '';
  const print = (line: string) => (out += `${line}\n`);
  const code = await auditVerify(args, env, print, print);
  return { code, out };
}

export function verifyCommand(env: Record<string, string>, args: string[] = []): Promise<NodeRun> {
  return runNode(path.join(REPO_ROOT, 'dist', 'scripts', 'audit-verify.js'), args, env);
}
