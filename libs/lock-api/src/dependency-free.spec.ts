import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// NFR-16: the API library imports nothing but itself and Node built-ins.
describe('libs/lock-api', () => {
  it('imports only relative modules and node: built-ins', () => {
    const dir = __dirname;
    const offenders: string[] = [];
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
      const source = readFileSync(join(dir, file), 'utf8');
      for (const match of source.matchAll(/(?:from|import|require\()\s*['"]([^'"]+)['"]/g)) {
        const spec = match[1];
        if (
          !spec.startsWith('.') &&
          !spec.startsWith('node:') &&
          !(file.endsWith('.spec.ts') && spec === '@dlock/lock-api')
        ) {
          offenders.push(`${file}: ${spec}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });
});
