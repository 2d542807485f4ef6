import type { NetNode } from '../infra/packet-filter.infra';
import { mulberry32 as prng } from '@dlock/prng';
import {
  bridge,
  cutOff,
  droppedPairs,
  isolate,
  majorityMinority,
  oneWay,
} from './partition.nemesis';

const nodes = (n: number): NetNode[] =>
  Array.from({ length: n }, (_, i) => ({ name: `n${i + 1}`, address: `127.0.0.${11 + i}` }));

const has = (pairs: Array<[string, string]>, a: string, b: string) =>
  pairs.some(([x, y]) => x === a && y === b);

describe('partition shapes', () => {
  test('isolate cuts one node both ways from every other, and nothing else', () => {
    const pairs = droppedPairs(isolate(nodes(3)[1], nodes(3)));
    expect(pairs.sort()).toEqual(
      [
        ['n1', 'n2'],
        ['n2', 'n1'],
        ['n2', 'n3'],
        ['n3', 'n2'],
      ].sort(),
    );
  });

  test('a split leaves a strict majority on one side, each side whole', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const group = nodes(5);
      const { cuts } = majorityMinority(group, prng(seed));
      const [majority, minority] = [cuts[0].from, cuts[0].to];
      expect(majority.length).toBeGreaterThan(minority.length);
      expect(minority.length).toBeGreaterThanOrEqual(1);
      expect(majority.length + minority.length).toBe(5);
      const pairs = droppedPairs({ label: '', cuts });
      for (const a of majority)
        for (const b of majority) expect(has(pairs, a.name, b.name)).toBe(false);
      for (const a of majority)
        for (const b of minority) expect(has(pairs, b.name, a.name)).toBe(true);
    }
  });

  test('one way drops one direction only', () => {
    const pairs = droppedPairs(oneWay(nodes(3), prng(7)));
    expect(pairs).toHaveLength(2);
    for (const [a, b] of pairs) expect(has(pairs, b, a)).toBe(false);
  });

  test('a bridge: two halves apart, the middle heard by both', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const p = bridge(nodes(5), prng(seed));
      const pairs = droppedPairs(p);
      const middle = /<(\w+)>/.exec(p.label)![1];
      expect(pairs.some(([a, b]) => a === middle || b === middle)).toBe(false);
      expect(pairs).toHaveLength(8); // 2 × 2 nodes, both ways
    }
  });

  test('the same seed gives the same shapes; another seed can differ', () => {
    const labels = (seed: number) => {
      const random = prng(seed);
      return [majorityMinority(nodes(5), random).label, bridge(nodes(5), random).label];
    };
    expect(labels(42)).toEqual(labels(42));
    const seen = new Set(Array.from({ length: 20 }, (_, i) => labels(i).join()));
    expect(seen.size).toBeGreaterThan(1);
  });

  test('cutOff separates clients from servers both ways', () => {
    const [w1, w2, r1] = nodes(3);
    expect(droppedPairs(cutOff([w1, w2], [r1])).sort()).toEqual(
      [
        ['n1', 'n3'],
        ['n2', 'n3'],
        ['n3', 'n1'],
        ['n3', 'n2'],
      ].sort(),
    );
  });
});
