import { decodeHandOverNote, encodeHandOverNote, MAX_NOTED_RETURNS, returnedOnPurpose } from './hand-over.note.js';

describe('hand-over note', () => {
  it('reads back what it wrote, keyed by its queue', () => {
    const note = { queue: 'orders.p3', returns: [['id:a', 4] as const, ['sha256:ff', 1] as const] };
    expect(decodeHandOverNote(encodeHandOverNote(note), 'orders.p3')).toEqual(note);
  });

  it('names at most MAX_NOTED_RETURNS messages', () => {
    const returns = Array.from({ length: MAX_NOTED_RETURNS + 5 }, (_, i) => [`id:${i}`, 1] as const);
    const read = decodeHandOverNote(encodeHandOverNote({ queue: 'q', returns }), 'q');
    expect('returns' in read && read.returns.length).toBe(MAX_NOTED_RETURNS);
  });

  it.each([
    ['not JSON', 'nope', 'the body is not JSON'],
    ['another queue', JSON.stringify({ queue: 'other', returns: [] }), 'queue must be the routing key the note was sent with'],
    ['no list', JSON.stringify({ queue: 'q', returns: {} }), `returns must be a list of at most ${MAX_NOTED_RETURNS} entries`],
    ['a bad entry', JSON.stringify({ queue: 'q', returns: [['id:a']] }), 'each return must be [identity, count]'],
    ['an empty identity', JSON.stringify({ queue: 'q', returns: [['', 1]] }), 'an identity must be a non-empty string'],
    ['a count of 0', JSON.stringify({ queue: 'q', returns: [['id:a', 0]] }), 'a count must be a whole number from 1'],
    ['a fraction', JSON.stringify({ queue: 'q', returns: [['id:a', 1.5]] }), 'a count must be a whole number from 1'],
  ])('refuses %s', (_what, body, problem) => {
    expect(decodeHandOverNote(Buffer.from(body), 'q')).toEqual({ problem });
  });
});

describe('returnedOnPurpose', () => {
  it('is a recalled delivery whose handler ended, on a channel still open: its return is the hand-over, no crash', () => {
    expect(returnedOnPurpose({ recalled: true, lost: false, running: false })).toBe(true);
  });

  it.each([
    ['not recalled (a failure without settling)', { recalled: false, lost: false, running: false }],
    ['its channel lost (a crash, a consumer timeout)', { recalled: true, lost: true, running: false }],
    ['its handler still running at the close (it outlived the hand-over)', { recalled: true, lost: false, running: true }],
  ])('counts a delivery %s as the broker does', (_what, end) => {
    expect(returnedOnPurpose(end)).toBe(false);
  });
});
