import { NOTES_MARKER, notesOf } from '../../bench/report-notes';

/** A bench rewriting its committed report keeps the notes written by hand below the marker. */
describe('report notes', () => {
  it('carries the marker and everything after it, trailing blank lines trimmed', () => {
    const old = `# Report\n\n| a |\n\n${NOTES_MARKER}\n\n## Notes\n\nwhy the figure moved\n\n`;
    expect(notesOf(old)).toBe(`${NOTES_MARKER}\n\n## Notes\n\nwhy the figure moved`);
  });

  it('a report without notes (or none yet) gets the marker alone', () => {
    expect(notesOf('# Report\n\n| a |\n')).toBe(NOTES_MARKER);
    expect(notesOf('')).toBe(NOTES_MARKER);
  });
});
