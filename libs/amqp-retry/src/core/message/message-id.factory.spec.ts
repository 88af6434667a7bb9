import { newMessageId } from './message-id.factory.js';

describe('newMessageId', () => {
  it('is a version 4 UUID, a new one each time', () => {
    const ids = new Set(Array.from({ length: 1_000 }, () => newMessageId()));
    expect(ids.size).toBe(1_000);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
