import { relayDatabaseProblem } from './outbox.database-failure.js';

describe('relayDatabaseProblem', () => {
  const error = (code: string | undefined, message: string) => Object.assign(new Error(message), { code });

  it('says a permission was refused, and what to grant', () => {
    expect(relayDatabaseProblem('t', error('42501', 'permission denied for table t'))).toBe(
      "the outbox relay of t is refused by the database: permission denied for table t (SQLSTATE 42501, insufficient privilege: grant the relay's database user SELECT, UPDATE and DELETE on t, and INSERT to the writers)",
    );
  });

  it('gives the code of another refused statement', () => {
    expect(relayDatabaseProblem('t', error('42P01', 'relation "t" does not exist'))).toBe(
      'the outbox relay of t has a statement refused by the database: relation "t" does not exist (SQLSTATE 42P01)',
    );
  });

  it('says the database cannot be reached for a connection failure or an error without a code', () => {
    expect(relayDatabaseProblem('t', error('57P01', 'terminating connection'))).toMatch(
      /^the outbox relay of t cannot reach the database: terminating/,
    );
    expect(relayDatabaseProblem('t', error('08006', 'connection failure'))).toMatch(/cannot reach the database/);
    expect(relayDatabaseProblem('t', new Error('connect ECONNREFUSED 127.0.0.1:5432'))).toMatch(/cannot reach the database: connect ECONNREFUSED/);
  });
});
