import type { MessageProperties } from 'amqplib';
import { sampleProperties } from '../../testing/message-properties.fixture.js';
import type { ParkedMessageView } from './parked-messages.types.js';
import {
  matchesFilter,
  MAX_COUNTED_ERRORS,
  OTHER_ERRORS,
  ParkedTally,
  parkedIdOf,
  replayPublishOptions,
  toJsonLine,
  toParkedView,
  withBodyPreview,
  type ParkedDelivery,
} from './parked.view.js';

const properties = (headers: Record<string, unknown> = {}, over: Partial<MessageProperties> = {}): MessageProperties =>
  sampleProperties({ ...over, headers });

const parked = (over: Record<string, unknown> = {}, body = '{"order":1}'): ParkedDelivery => ({
  content: Buffer.from(body),
  properties: properties({
    tenant: 'acme',
    'x-parked-reason': 'exhausted',
    'x-exception-message': 'Payment declined',
    'x-exception-stack': 'Error: Payment declined\n    at x',
    'x-original-exchange': 'shop',
    'x-original-routing-key': 'order.created',
    'x-original-queue': 'orders',
    'x-retry-attempts': 4,
    'x-parked-at': '2026-01-02T03:04:05.678Z',
    'x-parked-id': 'p-1',
    'x-retry-death-history': [{ queue: 'orders', reason: 'rejected', count: 3 }],
    ...over,
  }),
});

describe('toParkedView masks credentials in the exception texts of copies parked by older versions', () => {
  it('in the error, in the headers, in the JSON line and in the summary; the id stays that of the stored copy', () => {
    const leaky = parked({
      'x-parked-id': undefined,
      'x-exception-message': 'connect to amqp://svc:p@ss/w0rd@rabbit:5672 failed',
      'x-exception-stack': Buffer.from('Error: connect to amqp://svc:p@ss/w0rd@rabbit:5672 failed\n    at x'),
    });
    const view = toParkedView(leaky, 'orders.error');
    expect(view.error).toBe('connect to amqp://svc:***@rabbit:5672 failed');
    expect(view.headers['x-exception-stack']).toBe('Error: connect to amqp://svc:***@rabbit:5672 failed\n    at x');
    expect(toJsonLine(view)).not.toContain('w0rd');
    expect(JSON.stringify(summarize([view]))).not.toContain('w0rd');
    expect(view.id).toBe(parkedIdOf(leaky));
  });
});

describe('parkedIdOf', () => {
  it('is the x-parked-id written at park time', () => {
    expect(parkedIdOf(parked())).toBe('p-1');
  });

  it('is a digest for a copy parked without one, the same whatever a browse raised', () => {
    const old = parked({ 'x-parked-id': undefined });
    delete old.properties.headers!['x-parked-id'];
    const browsed = { ...old, properties: properties({ ...old.properties.headers, 'x-delivery-count': 7, 'x-acquired-count': 8 }) };
    expect(parkedIdOf(old)).toMatch(/^h-[0-9a-f]{24}$/);
    expect(parkedIdOf(browsed)).toBe(parkedIdOf(old));
    expect(parkedIdOf({ ...old, content: Buffer.from('other') })).not.toBe(parkedIdOf(old));
  });
});

describe('toParkedView', () => {
  it('reads the parking headers', () => {
    const view = toParkedView(parked(), 'orders.error');
    expect(view).toMatchObject({
      id: 'p-1',
      queue: 'orders',
      errorQueue: 'orders.error',
      reason: 'exhausted',
      error: 'Payment declined',
      attempts: 4,
      body: '{"order":1}',
      bodyEncoding: 'utf8',
      deaths: [{ queue: 'orders', reason: 'rejected', count: 3 }],
    });
    expect(view.parkedAt?.toISOString()).toBe('2026-01-02T03:04:05.678Z');
    expect(view.properties).toEqual({
      contentType: 'application/json',
      deliveryMode: 2,
      correlationId: 'c-1',
      messageId: 'm-1',
      timestamp: 1_700_000_000,
      type: 'order.created',
      appId: 'shop',
    });
    expect(view.headers.tenant).toBe('acme');
  });

  it("reads a copy without x-original-queue as the fallback queue's only when the library parked it (x-parked-reason)", () => {
    const content = Buffer.from('{}');
    expect(toParkedView({ content, properties: properties({ 'x-parked-reason': 'exhausted' }) }, 'q.error', 'q').queue).toBe('q');
    // A business message in a queue named as a parking queue is no handler queue's.
    expect(toParkedView({ content, properties: properties({ tenant: 'acme' }) }, 'q.error', 'q').queue).toBe('');
    expect(toParkedView({ content, properties: properties() }, 'q.error', 'q').queue).toBe('');
  });

  it('shows a binary body as base64 and Buffers in headers as base64, and hides browse counters', () => {
    const delivery = { content: Buffer.from([0xff, 0x00, 0xfe]), properties: properties({ blob: Buffer.from('hi'), 'x-delivery-count': 3 }) };
    const view = toParkedView(delivery, 'q.error');
    expect(view).toMatchObject({ body: '/wD+', bodyEncoding: 'base64', queue: '', reason: '', error: '', deaths: [] });
    expect(view.headers).toEqual({ blob: 'aGk=' });
    expect(() => JSON.parse(toJsonLine(view))).not.toThrow();
  });

  it('keeps a capped text history as one element, and an unreadable time as no time', () => {
    const view = toParkedView(parked({ 'x-retry-death-history': 'text...', 'x-parked-at': 'yesterday' }), 'e');
    expect(view.deaths).toEqual(['text...']);
    expect(view.parkedAt).toBeUndefined();
  });
});

describe('withBodyPreview', () => {
  const view = (content: Buffer) => toParkedView({ content, properties: properties() }, 'orders.error');

  it('keeps a body within the bound whole, saying its size', () => {
    const cut = withBodyPreview(view(Buffer.from('{"a":"é"}')), 16);
    expect([cut.body, cut.bodyBytes, cut.bodyTruncated]).toEqual(['{"a":"é"}', 10, false]);
  });

  it('cuts a UTF-8 body to the bound at a character boundary, saying its whole size', () => {
    const body = `ab${'é'.repeat(10)}`; // 22 bytes
    const cut = withBodyPreview(view(Buffer.from(body)), 7);
    expect([cut.body, cut.bodyBytes, cut.bodyTruncated]).toEqual(['abéé', 22, true]);
    const astral = withBodyPreview(view(Buffer.from('a😀b')), 3);
    expect([astral.body, astral.bodyBytes]).toEqual(['a', 6]);
  });

  it('cuts a binary body at a whole base64 group', () => {
    const content = Buffer.from([0xff, 0xfe, 0, 1, 2, 3, 4, 5, 6, 7]);
    const cut = withBodyPreview(view(content), 7);
    expect([cut.bodyEncoding, cut.body, cut.bodyBytes, cut.bodyTruncated]).toEqual(['base64', content.subarray(0, 6).toString('base64'), 10, true]);
  });

  it('holds a large body to the bound', () => {
    const cut = withBodyPreview(view(Buffer.from('x'.repeat(5_000_000))), 16 * 1024);
    expect(cut.body.length).toBe(16 * 1024);
    expect(cut.bodyBytes).toBe(5_000_000);
  });
});

describe('matchesFilter', () => {
  const view = toParkedView(parked({}, 'hello World'), 'orders.error');
  it.each([
    [{}, true],
    [{ queue: 'orders' }, true],
    [{ queue: 'other' }, false],
    [{ reason: 'exhausted' }, true],
    [{ reason: 'malformed' }, false],
    [{ error: 'payment' }, true],
    [{ error: 'timeout' }, false],
    [{ since: new Date('2026-01-02T03:04:05.678Z') }, true],
    [{ since: new Date('2026-01-02T03:04:05.679Z') }, false],
    [{ until: new Date('2026-01-02T03:04:05.679Z') }, true],
    [{ until: new Date('2026-01-02T03:04:05.678Z') }, false],
    [{ text: 'WORLD' }, true],
    [{ text: 'planet' }, false],
    [{ reason: 'exhausted', error: 'declined', text: 'hello' }, true],
    [{ reason: 'exhausted', error: 'declined', text: 'bye' }, false],
  ])('%j → %s', (filter, expected) => expect(matchesFilter(view, filter)).toBe(expected));

  it('never matches a time range or a text without a time or a text body', () => {
    const binary = toParkedView({ content: Buffer.from([0xff]), properties: properties() }, 'e');
    expect(matchesFilter(binary, { since: new Date(0) })).toBe(false);
    expect(matchesFilter(binary, { text: '' })).toBe(false);
  });
});

/** A summary of a list of views, counted as a walk counts them. */
function summarize(views: readonly ParkedMessageView[], withGroups = false) {
  const tally = new ParkedTally(withGroups);
  for (const view of views) tally.add(view);
  return tally.summary();
}

describe('summarize', () => {
  it('counts by reason and by error, largest first, ties by name', () => {
    const views = [
      parked({ 'x-exception-message': 'b' }),
      parked({ 'x-exception-message': 'a' }),
      parked({ 'x-exception-message': 'b', 'x-parked-reason': 'malformed' }),
    ].map((p) => toParkedView(p, 'e'));
    expect(summarize(views)).toMatchObject({
      total: 3,
      byReason: [
        { reason: 'exhausted', count: 2 },
        { reason: 'malformed', count: 1 },
      ],
      byError: [
        { error: 'b', count: 2 },
        { error: 'a', count: 1 },
      ],
    });
  });
});

describe('ParkedTally', () => {
  it('counts a message at a time, with the failure groups and the oldest park when asked', () => {
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    const views = ['b', 'a', 'b'].map((error, n) => ({ ...toParkedView(parked({ 'x-exception-message': error }), 'e'), parkedAt: at(9 - n) }));
    const tally = new ParkedTally(true);
    for (const view of views) tally.add(view);
    const summary = tally.summary();
    expect(summary).toMatchObject({
      total: 3,
      byReason: [{ reason: 'exhausted', count: 3 }],
      byError: [
        { error: 'b', count: 2 },
        { error: 'a', count: 1 },
      ],
      oldestParkedAt: at(7),
    });
    expect(summary.groups?.map((g) => [g.error, g.count])).toEqual([
      ['b', 2],
      ['a', 1],
    ]);
    expect(summarize(views)).not.toHaveProperty('groups');
  });

  it('counts at most MAX_COUNTED_ERRORS distinct exception messages apart, the others together', () => {
    const tally = new ParkedTally();
    const view = toParkedView(parked(), 'e');
    for (let n = 0; n <= MAX_COUNTED_ERRORS + 5; n++) tally.add({ ...view, error: `order ${n} declined` });
    tally.add({ ...view, error: 'order 0 declined' });
    const { total, byError } = tally.summary();
    expect(total).toBe(MAX_COUNTED_ERRORS + 7);
    expect(byError).toHaveLength(MAX_COUNTED_ERRORS + 1);
    expect(byError.slice(0, 2)).toEqual([
      { error: OTHER_ERRORS, count: 6 },
      { error: 'order 0 declined', count: 2 },
    ]);
  });
});

describe('replayPublishOptions', () => {
  const now = new Date('2026-02-03T00:00:00.000Z');

  it('keeps the user’s headers, properties and first route, and drops every other parking header and counter', () => {
    const delivery = parked({ 'x-death': [{}], 'x-delivery-count': 2, 'x-first-death-queue': 'orders', 'x-original-expiration': '5000' });
    const options = replayPublishOptions(delivery.properties, { queue: 'orders', now });
    expect(options.headers).toEqual({
      tenant: 'acme',
      'x-original-exchange': 'shop',
      'x-original-routing-key': 'order.created',
      'x-original-queue': 'orders',
      'x-replayed-at': '2026-02-03T00:00:00.000Z',
    });
    expect(options).toMatchObject({
      contentType: 'application/json',
      correlationId: 'c-1',
      messageId: 'm-1',
      timestamp: 1_700_000_000,
      type: 'order.created',
      appId: 'shop',
      persistent: true,
    });
    expect(options.expiration).toBeUndefined();
  });

  it('takes a new content type for an edited body', () => {
    expect(replayPublishOptions(parked().properties, { queue: 'orders', now, contentType: 'text/plain' }).contentType).toBe('text/plain');
  });

  it('names the queue it is replayed to, also for a copy parked without one (an older version: the recorded handler queue)', () => {
    const old = parked({ 'x-original-queue': undefined, 'x-parked-id': undefined });
    expect(replayPublishOptions(old.properties, { queue: 'orders', now }).headers).toMatchObject({
      'x-original-queue': 'orders',
      'x-original-routing-key': 'order.created',
    });
    // A copy without a route keeps none (its replay is named by the queue it goes to, as before).
    const bare = parked();
    delete bare.properties.headers?.['x-original-exchange'];
    delete bare.properties.headers?.['x-original-routing-key'];
    const headers = replayPublishOptions(bare.properties, { queue: 'orders', now }).headers as Record<string, unknown>;
    expect(Object.keys(headers).sort()).toEqual(['tenant', 'x-original-queue', 'x-replayed-at']);
  });
});
