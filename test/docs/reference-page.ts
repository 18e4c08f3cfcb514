// A reference page of docs/ as the tests read it: its `### ` headings (one per field, flag or metric),
// their GitHub anchors, and the facts line under each.
import { readFileSync } from 'node:fs';
import { anchor } from '../../build/cli-reference.ts';

export interface Entry {
  /** The heading's text, backticks dropped: `listeners[].backends[].weight`. */
  readonly heading: string;
  /** The first paragraph under it: `counter · labels listener · connections`. */
  readonly facts: string;
}

export function readPage(name: string): string {
  return readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');
}

export function entriesOf(page: string): Entry[] {
  return [...page.matchAll(/^### (.+)\n\n(.*)$/gm)].map(([, heading, facts]) => ({
    heading: heading!.replaceAll('`', ''),
    facts: facts!,
  }));
}

/** Every anchor a link can name on the page. */
export function anchorsOf(page: string): Set<string> {
  return new Set([...page.matchAll(/^#+ (.+)$/gm)].map(([, heading]) => anchor(heading!)));
}
