import { EnvError } from '@dlock/config';
import { readRailStubConfig } from './config';

describe('readRailStubConfig: the slow calls', () => {
  it('makes no call slow unless asked, and a slow call takes 5 s', () => {
    const config = readRailStubConfig({});
    expect(config.RAIL_STUB_SLOW_RATE).toBe(0);
    expect(config.RAIL_STUB_SLOW_LATENCY_MS).toBe(5_000);
  });

  it('reads a share and a latency', () => {
    const config = readRailStubConfig({
      RAIL_STUB_SLOW_RATE: '0.1',
      RAIL_STUB_SLOW_LATENCY_MS: '4000',
    });
    expect(config.RAIL_STUB_SLOW_RATE).toBe(0.1);
    expect(config.RAIL_STUB_SLOW_LATENCY_MS).toBe(4_000);
  });

  it.each([
    ['RAIL_STUB_SLOW_RATE', '1.5'],
    ['RAIL_STUB_SLOW_RATE', '-0.1'],
    ['RAIL_STUB_SLOW_RATE', 'often'],
    ['RAIL_STUB_SLOW_LATENCY_MS', '-1'],
    ['RAIL_STUB_SLOW_LATENCY_MS', '600001'],
    ['RAIL_STUB_SLOW_LATENCY_MS', '2.5'],
    ['RAIL_STUB_SLOW_LATENCY_MS', '5s'],
  ])('refuses %s=%s at boot, naming the variable', (name, value) => {
    const read = () => readRailStubConfig({ [name]: value });
    expect(read).toThrow(EnvError);
    expect(read).toThrow(new RegExp(name));
  });
});
