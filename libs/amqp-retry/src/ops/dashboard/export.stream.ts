import { Readable } from 'node:stream';

/**
 * An export's body: the lines of `lines` each with a newline, starting with `first` (already read, so that a
 * failure before the first line could still be answered with an error status). When the reader goes away (the
 * browser cancels the download, the connection drops), the stream is destroyed and the export is told to stop
 * (`return()`): an export that waits for its reader would otherwise hold its parking queue, and every later call on
 * that queue would wait behind it.
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
