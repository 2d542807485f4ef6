/**
 * Hand-written notes in a committed report survive the bench rewriting it:
 * everything from this marker line to the end is carried over.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const NOTES_MARKER = '<!-- notes: kept when the bench rewrites this report -->';

/** The marker and the notes after it in a report's previous text, or the marker alone. */
export function notesOf(previous: string): string {
  const at = previous.indexOf(NOTES_MARKER);
  return at < 0 ? NOTES_MARKER : previous.slice(at).trimEnd();
}

/** notesOf the report at `file`, when there is one. */
export function notesOfFile(file: string): string {
  return notesOf(existsSync(file) ? readFileSync(file, 'utf8') : '');
}

/** Writes a bench's freshly measured `text` to `file`, followed by the notes of the report it replaces. */
export function writeKeepingNotes(file: string, text: string): void {
  const notes = notesOfFile(file);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${text}\n${notes}\n`);
}
