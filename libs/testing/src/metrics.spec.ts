import { idShapedLabels, metricSum, parseMetrics, seriesValue } from './metrics';

const TEXT = [
  '# HELP lock_server_sessions Sessions by state',
  '# TYPE lock_server_sessions gauge',
  'lock_server_sessions{state="active"} 3',
  'lock_server_sessions{state="closed"} 1',
  'lock_server_op_seconds_bucket{le="0.005",op="acquire",result="ok"} 7',
  'nodejs_version_info{version="v20.19.0",major="20"} 1',
  'payout_execute_seconds_count{outcome="posted"} 2',
  'dlock_audit_chain_breaks{chain="payout_transition"} 0',
].join('\n');

describe('the metrics scraper helpers (NFR-09 test support)', () => {
  it('parses samples and sums a labelled series', () => {
    expect(parseMetrics(TEXT)).toHaveLength(6);
    expect(metricSum(TEXT, 'lock_server_sessions')).toBe(4);
    expect(metricSum(TEXT, 'lock_server_sessions', { state: 'closed' })).toBe(1);
    expect(metricSum(TEXT, 'absent_total')).toBe(0);
  });

  it('reads one series exactly, its labels as prom-client prints them', () => {
    expect(seriesValue(TEXT, 'lock_server_sessions{state="closed"}', 'throw')).toBe(1);
    expect(seriesValue(TEXT, 'dlock_audit_chain_breaks{chain="payout_transition"}', 'throw')).toBe(
      0,
    );
  });

  it('tells a missing series from 0: it throws naming it, or reads 0 only when the caller says so', () => {
    const misspelt = 'lock_server_session{state="closed"}';
    expect(() => seriesValue(TEXT, misspelt, 'throw')).toThrow(`no series ${misspelt}`);
    expect(seriesValue(TEXT, misspelt, 'zero')).toBe(0);
    expect(() => seriesValue(TEXT, 'lock_server_sessions', 'throw')).toThrow();
  });

  it('finds nothing id-shaped in ordinary labels (bucket bounds and versions included)', () => {
    expect(idShapedLabels(TEXT)).toEqual([]);
  });

  it.each([
    ['a session uuid', 'x{session="6f1c2a8e-3d4b-4c5a-9e8f-0a1b2c3d4e5f"} 1', 'uuid'],
    ['a long hex id', 'x{trace="4bf92f3577b34da6a3ce929d0e0e4736"} 1', 'long hex'],
    ['a numeric token', 'x{token="9007199254740993"} 1', 'numeric id'],
    ['a lock key', 'x{key="payout:acc-a"} 1', 'lock key'],
    ['a payout id with a prefix', 'x{payout="pay_000123"} 1', 'prefixed id'],
    ['a session id with a prefix', 'x{session="sess-7"} 1', 'prefixed id'],
  ])('flags %s (the negative control)', (_name, line, shape) => {
    expect(idShapedLabels(line)).toEqual([
      `${line.split('{')[0]}{${line.split('{')[1].split('}')[0]}}: ${shape}`,
    ]);
  });
});
