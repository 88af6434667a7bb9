import { ownerText, shortMember } from './partitions.view.js';

const part = { queue: 'orders.p0', index: 0, mine: false, consuming: false };

describe("the page's Partitions section", () => {
  it('says who owns a partition: nobody yet, this instance (consuming or taking over), another one by its short id', () => {
    expect(ownerText(part)).toBe('not assigned yet');
    expect(ownerText({ ...part, owner: 'aaaaaaaa-1111', mine: true, consuming: true })).toBe('this instance');
    expect(ownerText({ ...part, owner: 'aaaaaaaa-1111', mine: true })).toBe('this instance (taking over)');
    expect(ownerText({ ...part, owner: '0123456789abcdef' })).toBe('instance 01234567');
  });

  it('shortens a member id to its first 8 characters', () => {
    expect(shortMember('0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0')).toBe('0f1e2d3c');
  });
});
