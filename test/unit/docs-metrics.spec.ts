import { documentedButNotExposed, labelMentions } from '../medium/support/docs-metrics';
import { parseExposition } from '../medium/support/scraped-series';

/**
 * The reader behind "every metric the docs mention exists" (test/medium/healthy-system.spec.ts):
 * what it takes from a code span, and that a wrong label value in the docs is named with its line.
 */

it('reads label names and values as an operator writes them in a query', () => {
  expect(labelMentions('m', 'a="x", b=y|z, c=~"p|q", d', 'f:1')).toEqual([
    { where: 'f:1', metric: 'm', label: 'a', value: 'x' },
    { where: 'f:1', metric: 'm', label: 'b', value: 'y' },
    { where: 'f:1', metric: 'm', label: 'b', value: 'z' },
    { where: 'f:1', metric: 'm', label: 'c', value: 'p' },
    { where: 'f:1', metric: 'm', label: 'c', value: 'q' },
    { where: 'f:1', metric: 'm', label: 'd' },
  ]);
});

it('names the doc line of a label value no running process exposes', () => {
  // The runbook's claim-skip label, exposed here with another value only.
  const exposition = parseExposition(
    [
      '# TYPE executor_payout_attempts_total counter',
      'executor_payout_attempts_total{result="posted"} 3',
    ].join('\n'),
  );
  const missing = documentedButNotExposed([exposition]);
  expect(missing).toContainEqual(
    expect.stringMatching(
      /^docs\/operations\.md:\d+: no series executor_payout_attempts_total\{result="skipped_terminal"\}$/,
    ),
  );
  expect(missing).not.toContainEqual(
    expect.stringMatching(/: no metric executor_payout_attempts_total$/),
  );
  // A metric nothing exposes at all is named once per line, without its labels.
  expect(missing).toContainEqual(expect.stringMatching(/: no metric payout_stale_claims_total$/));
});
