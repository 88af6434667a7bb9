import { queueStateOf, queueStateWord } from './queue.state.js';

describe('queueStateOf', () => {
  it('a pause wins over the circuit; a closed circuit or none is running', () => {
    expect(queueStateOf({ by: 'alice', since: 0 }, 'open')).toBe('paused');
    expect(queueStateOf(undefined, 'open')).toBe('open');
    expect(queueStateOf(undefined, 'half-open')).toBe('half-open');
    expect(queueStateOf(undefined, 'closed')).toBe('running');
    expect(queueStateOf(undefined, undefined)).toBe('running');
  });
});

describe('queueStateWord (the page State column)', () => {
  it('says nothing while running, the breaker state otherwise, and who paused', () => {
    expect(queueStateWord('running')).toBeUndefined();
    expect(queueStateWord('open')).toBe('breaker open');
    expect(queueStateWord('half-open')).toBe('breaker half-open');
    expect(queueStateWord('paused', 'alice')).toBe('paused by alice');
    expect(queueStateWord('paused')).toBe('paused');
  });
});
