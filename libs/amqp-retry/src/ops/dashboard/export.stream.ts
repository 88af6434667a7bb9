import { Readable } from 'node:stream';

/**
 * An export's body: `first` (read already, so that a failure before it was still an error status), then `lines`, each
 * with a newline. When the reader goes away (a cancelled download, a dropped connection), the export is told to stop
 * (`return()`): one waiting for its reader would hold its parking queue, and every later call on it would wait behind.
 */
export function jsonLinesStream(first: IteratorResult<string>, lines: AsyncIterator<string>, onError: (error: unknown) => void): Readable {
  async function* body(): AsyncGenerator<string> {
    let line = first;
    try {
      for (; !line.done; line = await lines.next()) yield `${line.value}\n`;
    } catch (error) {
      onError(error);
      throw error;
    } finally {
      if (!line.done) await lines.return?.();
    }
  }
  return Readable.from(body());
}
