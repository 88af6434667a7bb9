import type { PageRequest, ParkedFilter, ParkedSelection } from '../../core/parking/parked-messages.types.js';

/**
 * Reads what the page sends (query strings and JSON bodies) into the ParkedMessages types. Pure and strict: the API
 * is reachable by whoever passes the guard, so every field is checked for type and size, and a bad one is named.
 */

/** A request field the page (or a hand-made call) got wrong: answered with 400 and this message. */
export class DashboardRequestError extends Error {
  constructor(field: string, problem: string) {
    super(`${field} ${problem}`);
    this.name = 'DashboardRequestError';
  }
}

export const MAX_TEXT_LENGTH = 1000;
export const MAX_PAGE_SIZE = 200;
export const DEFAULT_PAGE_SIZE = 50;
/**
 * Most bytes of each body the list (`api/messages`) carries: a page is at most MAX_PAGE_SIZE of them, however large
 * the bodies parked. The whole body is in a message's own route and in the export.
 */
export const LIST_BODY_PREVIEW_BYTES = 16 * 1024;
export const MAX_IDS = 1000;
/** A corrected body: Express's JSON parser takes 100 kB by default, so this is a bound for other parsers. */
export const MAX_EDITED_BODY_LENGTH = 1024 * 1024;

type Input = Readonly<Record<string, unknown>>;

const asObject = (value: unknown, field: string): Input => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new DashboardRequestError(field, 'must be a JSON object');
  return value as Input;
};

function optionalText(input: Input, key: string, field = key, max = MAX_TEXT_LENGTH): string | undefined {
  const value = input[key];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw new DashboardRequestError(field, 'must be a string');
  if (value.length > max) throw new DashboardRequestError(field, `is longer than ${max} characters`);
  return value;
}

function requiredText(input: Input, key: string, field = key): string {
  const value = optionalText(input, key, field);
  if (value === undefined) throw new DashboardRequestError(field, 'is required');
  return value;
}

function optionalDate(input: Input, key: string, field = key): Date | undefined {
  const text = optionalText(input, key, field, 64);
  if (text === undefined) return undefined;
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) throw new DashboardRequestError(field, `is not a date: ${JSON.stringify(text)}`);
  return date;
}

function optionalCount(input: Input, key: string, max: number): number | undefined {
  const value = input[key];
  if (value === undefined || value === '') return undefined;
  const n = typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > max) {
    throw new DashboardRequestError(key, `must be a whole number from 0 to ${max}`);
  }
  return n;
}

/**
 * Refuses the fields of a JSON body that mean nothing here: a misspelt one (`dryrun`, `filter.reson`) ignored would turn
 * a dry run or a narrow selection into a change of every message.
 */
export function refuseUnknownFields(input: Input, known: readonly string[], field: string): void {
  const unknown = Object.keys(input).filter((key) => !known.includes(key));
  if (unknown.length > 0) {
    throw new DashboardRequestError(
      field,
      `has unknown field(s) ${unknown.map((key) => JSON.stringify(key)).join(', ')}; known: ${known.join(', ')}`,
    );
  }
}

const FILTER_FIELDS = ['queue', 'reason', 'error', 'text', 'since', 'until', 'group', 'messageId', 'correlationId'] as const;

/** A filter from a query string (`?queue=&reason=&error=&text=&since=&until=`) or a JSON object (whose unknown fields are refused). */
export function readFilter(value: unknown, field = 'filter'): ParkedFilter {
  const input = asObject(value ?? {}, field);
  if (field !== 'query') refuseUnknownFields(input, FILTER_FIELDS, field);
  const filter: Record<string, string | Date> = {};
  // In FILTER_FIELDS order: the first bad field is the one named.
  for (const key of FILTER_FIELDS) {
    const at = field === 'query' ? key : `${field}.${key}`;
    const read = key === 'since' || key === 'until' ? optionalDate(input, key, at) : optionalText(input, key, at);
    if (read !== undefined) filter[key] = read;
  }
  return filter as ParkedFilter;
}

/**
 * `?offset=&limit=` with a page of DEFAULT_PAGE_SIZE and at most MAX_PAGE_SIZE, each body cut to
 * LIST_BODY_PREVIEW_BYTES.
 */
export function readPage(query: unknown): Required<PageRequest> {
  const input = asObject(query ?? {}, 'query');
  return {
    offset: optionalCount(input, 'offset', 1_000_000_000) ?? 0,
    limit: optionalCount(input, 'limit', MAX_PAGE_SIZE) ?? DEFAULT_PAGE_SIZE,
    bodyPreviewBytes: LIST_BODY_PREVIEW_BYTES,
  };
}

/**
 * `{ errorQueue, ids?, filter?, expected?, dryRun? }` (the last two read by readOperation). A selection must name ids or
 * a filter (`filter: {}` for all): a body that forgot both must not replay or purge a whole queue by accident.
 */
export function readSelection(body: unknown): ParkedSelection {
  const input = asObject(body, 'body');
  refuseUnknownFields(input, ['errorQueue', 'ids', 'filter', 'expected', 'dryRun'], 'body');
  const errorQueue = requiredText(input, 'errorQueue');
  const selection: ParkedSelection = { errorQueue };
  const { ids } = input;
  if (ids !== undefined) {
    if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => typeof id === 'string' && id.length > 0 && id.length <= 200)) {
      throw new DashboardRequestError('ids', 'must be a non-empty array of ids');
    }
    if (ids.length > MAX_IDS) throw new DashboardRequestError('ids', `holds more than ${MAX_IDS} ids; select by filter instead`);
    selection.ids = [...new Set(ids as string[])];
  }
  if (input.filter !== undefined) selection.filter = readFilter(input.filter);
  if (selection.ids === undefined && selection.filter === undefined) {
    throw new DashboardRequestError('body', 'names neither ids nor a filter; send filter: {} to act on every parked message of the queue');
  }
  return selection;
}

/**
 * The selection of a failure group's replay or purge: `{ errorQueue, group, filter?, by?, expected? }` (`by` and
 * `expected` read elsewhere). `filter` narrows the group as the page's filter narrowed the count it showed (its queue,
 * body text, time range); without it, the whole group.
 */
export function readGroupSelection(body: unknown): ParkedSelection & { filter: ParkedFilter & { group: string } } {
  const input = asObject(body, 'body');
  refuseUnknownFields(input, ['errorQueue', 'group', 'filter', 'by', 'expected'], 'body');
  const errorQueue = requiredText(input, 'errorQueue');
  const narrowing = readFilter(input.filter ?? {});
  if (narrowing.group !== undefined) throw new DashboardRequestError('filter.group', 'is not for a group action; give the group as group');
  const group = optionalText(input, 'group');
  if (group === undefined) throw new DashboardRequestError('group', 'is missing; give the key of a failure group (FailureGroup.key)');
  return { errorQueue, filter: { ...narrowing, group } };
}

/**
 * How a replay or purge body asks to run: `dryRun` (true: count, change nothing) and `expected` (the count the operator
 * confirmed, see OperationOptions.expected).
 */
export function readOperation(body: unknown): { dryRun?: boolean; expected?: number } {
  const input = asObject(body, 'body');
  const { dryRun } = input;
  if (dryRun !== undefined && typeof dryRun !== 'boolean') throw new DashboardRequestError('dryRun', 'must be true or false');
  const expected = optionalCount(input, 'expected', 1_000_000_000);
  return { ...(dryRun !== undefined && { dryRun }), ...(expected !== undefined && { expected }) };
}

/** `{ errorQueue, id, body, contentType?, dryRun? }` of an edit-and-replay (`dryRun` read by readOperation). */
export function readEdit(body: unknown): { errorQueue: string; id: string; body: string; contentType?: string } {
  const input = asObject(body, 'body');
  refuseUnknownFields(input, ['errorQueue', 'id', 'body', 'contentType', 'dryRun'], 'body');
  const edited = input.body;
  if (typeof edited !== 'string') throw new DashboardRequestError('body.body', 'must be a string (the corrected body)');
  if (edited.length > MAX_EDITED_BODY_LENGTH) throw new DashboardRequestError('body.body', `is longer than ${MAX_EDITED_BODY_LENGTH} characters`);
  const contentType = optionalText(input, 'contentType', 'contentType', 255);
  return { errorQueue: requiredText(input, 'errorQueue'), id: requiredText(input, 'id'), body: edited, ...(contentType ? { contentType } : {}) };
}

/** `?errorQueue=&queue=&reason=&error=&text=&since=&until=` of an export: one parking queue, a filter. */
export function readExportQuery(query: unknown): { errorQueue: string; filter: ParkedFilter } {
  const { errorQueue, ...filter } = asObject(query ?? {}, 'query');
  return { errorQueue: requiredText({ errorQueue }, 'errorQueue'), filter: readFilter(filter, 'query') };
}

/** A file name for an export of `errorQueue`: its name with anything but letters, digits, `.`, `_`, `-` replaced. */
export const exportFileName = (errorQueue: string): string => `${errorQueue.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 200)}.jsonl`;
